// Debugging ops: CheckNumerics (tf.debugging.check_numerics), AddCheckNumericsOps
// (tf.add_check_numerics_ops) and Print (tf.Print). CPU kernels only: they read the tensor on
// the host, so under soft placement a request for a GPU lands on the CPU (docs/api.md).
#include "placeflow/ops/debug/debug_ops.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <set>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {

std::string_view NonFiniteKind(const Tensor& t) {
  bool nan = false, inf = false;
  auto scan = [&](auto classify) {
    for (int64_t i = 0; i < t.num_elements() && !(nan && inf); ++i) {
      const int c = classify(i);
      nan |= c == FP_NAN;
      inf |= c == FP_INFINITE;
    }
  };
  // Half and bfloat16 are storage-only: their exponent and mantissa bits tell NaN from Inf.
  auto bits16 = [&](uint16_t exp_mask, uint16_t mant_mask) {
    const auto* p = static_cast<const uint16_t*>(t.raw_data());
    scan([&](int64_t i) {
      if ((p[i] & exp_mask) != exp_mask) return FP_NORMAL;
      return (p[i] & mant_mask) ? FP_NAN : FP_INFINITE;
    });
  };
  switch (t.dtype()) {
    case DT_FLOAT:
      scan([p = t.data<float>()](int64_t i) { return std::fpclassify(p[i]); });
      break;
    case DT_DOUBLE:
      scan([p = t.data<double>()](int64_t i) { return std::fpclassify(p[i]); });
      break;
    case DT_HALF:
      bits16(0x7C00, 0x03FF);
      break;
    case DT_BFLOAT16:
      bits16(0x7F80, 0x007F);
      break;
    default:
      break;
  }
  if (nan && inf) return "Inf and NaN";
  if (nan) return "NaN";
  if (inf) return "Inf";
  return "";
}

namespace {

const std::vector<DType> kFloatTypes = {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16};

class CheckNumericsOp : public OpKernel {
 public:
  explicit CheckNumericsOp(const Node& n) : OpKernel(n), message_(n.attr<std::string>("message")) {}
  Status Compute(OpKernelContext* ctx) override {
    std::string_view kind = NonFiniteKind(ctx->input(0));
    // TensorFlow's words; the executor appends the node, op and device.
    if (!kind.empty()) return errors::InvalidArgument(message_, " : Tensor had ", kind, " values");
    return ctx->ForwardInput(0, 0);
  }

 private:
  std::string message_;
};

PF_REGISTER_OP(OpDef("CheckNumerics")
                   .SetForwardsInput()
                   .Input("tensor", "T")
                   .Output("output", "T")
                   .TypeAttr("T", kFloatTypes)
                   .RequiredAttr("message")
                   .SetGradient([](const Scope& s, const Node& n, const Grads& g, Grads* dx) {
                     // As TensorFlow: the gradient is checked too, under its own message.
                     *dx = {ops::CheckNumerics(
                         s, g[0],
                         "Not a number (NaN) or infinity (Inf) values detected in gradient. " +
                             n.attr<std::string>("message"))};
                     return Status::OK();
                   })
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("CheckNumerics", kDeviceCpu), CheckNumericsOp);

// Serialises the lines of concurrent Print kernels.
std::mutex& PrintMutex() {
  static std::mutex mu;
  return mu;
}

class PrintOp : public OpKernel {
 public:
  explicit PrintOp(const Node& n)
      : OpKernel(n),
        message_(n.attr<std::string>("message")),
        first_n_(n.attr<int64_t>("first_n")),
        summarize_(n.attr<int64_t>("summarize")),
        names_(n.attr<std::vector<std::string>>("data_names")) {}

  Status Compute(OpKernelContext* ctx) override {
    if (first_n_ < 0 || printed_.fetch_add(1) < first_n_) {
      std::vector<Tensor> data;
      for (int i = 1; i < ctx->num_inputs(); ++i) data.push_back(ctx->input(i));
      std::string line = PrintLine(message_, names_, data, summarize_) + "\n";
      std::lock_guard<std::mutex> lock(PrintMutex());
      std::fwrite(line.data(), 1, line.size(), stderr);
      std::fflush(stderr);
    }
    return ctx->ForwardInput(0, 0);
  }

 private:
  std::string message_;
  int64_t first_n_, summarize_;
  std::vector<std::string> names_;
  std::atomic<int64_t> printed_{0};
};

const std::vector<DType> kDebugTypes = {DT_FLOAT, DT_DOUBLE, DT_INT32,   DT_INT64,
                                        DT_BOOL,  DT_HALF,   DT_BFLOAT16};

PF_REGISTER_OP(OpDef("Print")
                   .SetStateful()  // it has an effect: never pruned as a duplicate
                   .SetForwardsInput()
                   .Input("input", "T")
                   .InputList("data", "U", "N")
                   .Output("output", "T")
                   .TypeAttr("T", kDebugTypes)
                   .TypeAttr("U", kDebugTypes)
                   .RequiredAttr("N")
                   .Attr("message", std::string())
                   .Attr("first_n", int64_t{-1})
                   .Attr("summarize", int64_t{3})
                   .Attr("data_names", std::vector<std::string>{})
                   .SetGradient([](const Scope&, const Node& n, const Grads& g, Grads* dx) {
                     *dx = Grads(n.num_inputs());
                     (*dx)[0] = g[0];
                     return Status::OK();
                   })
                   .SetShapeFn(UnchangedShape));
PF_REGISTER_KERNEL(KernelDef("Print", kDeviceCpu), PrintOp);

}  // namespace

std::string PrintLine(const std::string& message, const std::vector<std::string>& names,
                      const std::vector<Tensor>& data, int64_t summarize) {
  std::string line = message;
  for (size_t i = 0; i < data.size(); ++i) {
    if (i > 0) line += "; ";
    if (i < names.size()) line += names[i] + " ";
    const int shown = summarize < 0 ? static_cast<int>(std::min<int64_t>(
                                          data[i].num_elements(), std::numeric_limits<int>::max()))
                                    : static_cast<int>(std::min<int64_t>(summarize, 1 << 20));
    std::string summary = data[i].DebugString(shown);
    // A cut-off summary ends "...": close its brackets, as "[[1, 2]...]".
    const auto open = std::count(summary.begin(), summary.end(), '[');
    const auto closed = std::count(summary.begin(), summary.end(), ']');
    line += summary + std::string(static_cast<size_t>(std::max<int64_t>(0, open - closed)), ']');
  }
  return line;
}

namespace ops {

Output CheckNumerics(const Scope& s, Output tensor, const std::string& message) {
  return NodeBuilder(s, "CheckNumerics").Input(tensor).Attr("message", message).Finalize();
}

Operation AddCheckNumericsOps(const Scope& scope, const std::vector<Operation>& only_for) {
  Graph* g = scope.graph();
  std::vector<Node*> nodes;
  if (only_for.empty()) {
    nodes.assign(g->nodes().begin(), g->nodes().end());
  } else {
    // What a Run of `only_for` executes: everything they depend on, data or control.
    std::set<Node*> seen;
    std::vector<Node*> stack;
    for (const Operation& op : only_for) stack.push_back(op.node);
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      if (n == nullptr || !seen.insert(n).second) continue;
      nodes.push_back(n);
      for (const Output& in : n->inputs()) stack.push_back(in.node);
      for (Node* c : n->control_inputs()) stack.push_back(c);
    }
    std::sort(nodes.begin(), nodes.end(), [](Node* a, Node* b) { return a->id() < b->id(); });
  }
  Scope s = scope.NewSubScope("add_check_numerics_ops");
  std::vector<Operation> checks;
  for (Node* n : nodes) {
    // Variables are references, and an op on a reference (Assign, an optimizer's apply) is an
    // update: checking its output would run the update (TensorFlow skips their ref dtypes).
    bool on_ref = n->op_def().is_variable() || n->op() == "CheckNumerics";
    for (int i = 0; i < n->num_inputs(); ++i) on_ref |= n->IsRefInput(i);
    if (on_ref) continue;
    for (int i = 0; i < n->num_outputs(); ++i) {
      if (std::find(kFloatTypes.begin(), kFloatTypes.end(), n->output_dtype(i)) ==
          kFloatTypes.end()) {
        continue;
      }
      checks.push_back(CheckNumerics(s, Output(n, i), fmt::format("{}:{}", n->name(), i)));
    }
  }
  return NoOp(s.WithOpName("group_deps").WithControlDependencies(checks));
}

Output Print(const Scope& s, Output input, std::vector<Output> data, const PrintOptions& options) {
  if (data.empty()) data = {input};
  std::vector<std::string> names;
  for (const Output& d : data) {
    if (d.node != nullptr) names.push_back(d.name());
    if (d.node != nullptr && data[0].node != nullptr && d.dtype() != data[0].dtype()) {
      throw Error(errors::InvalidArgument("Print's data tensors must share one dtype, but ",
                                          data[0].name(), " is ", DTypeName(data[0].dtype()),
                                          " and ", d.name(), " is ", DTypeName(d.dtype()),
                                          ": Cast them, or use one Print per dtype"));
    }
  }
  return NodeBuilder(s, "Print")
      .Input(input)
      .InputList(data)
      .Attr("message", options.message)
      .Attr("first_n", options.first_n)
      .Attr("summarize", options.summarize)
      .Attr("data_names", names)
      .Finalize();
}

}  // namespace ops
}  // namespace pf
