// Graph building, gradients and Run from bytes. The input is a tiny program: each step picks an
// op from a fixed list and reads its operands (earlier values), shapes and attributes from the
// following bytes. Build errors (pf::Error) and Status errors from Gradients or Run are fine;
// a crash, a hang or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "placeflow/core/logging.h"
#include "placeflow/placeflow.h"

namespace {

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  bool empty() const { return pos_ >= size_; }
  uint8_t Next() { return pos_ < size_ ? data_[pos_++] : 0; }
  int Below(int n) { return Next() % n; }
  bool Bool() { return Next() & 1; }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

constexpr int kMaxValues = 24;
constexpr int kMaxSteps = 32;
constexpr int kMaxDim = 5;

// A shape of rank 0-3 with dims 0-4 (rarely 0, which reaches empty-tensor paths).
std::vector<int64_t> SmallDims(Bytes& in) {
  std::vector<int64_t> dims(in.Below(4));
  for (int64_t& d : dims) d = in.Below(kMaxDim);
  return dims;
}

pf::Tensor FloatTensor(Bytes& in, const std::vector<int64_t>& dims) {
  pf::Tensor t(pf::DT_FLOAT, pf::Shape::FromDims(dims).ValueOrThrow());
  for (float& v : t.flat<float>()) v = static_cast<int8_t>(in.Next()) / 8.f;
  return t;
}

std::vector<int32_t> SmallInts(Bytes& in, int lo, int hi) {
  std::vector<int32_t> v(in.Below(5));
  for (int32_t& x : v) x = lo + in.Below(hi - lo + 1);
  return v;
}

struct Program {
  pf::Graph graph;
  pf::Scope root = pf::Scope::Root(&graph);
  std::vector<pf::Output> values;
  std::vector<pf::Output> float_inputs;  // the xs of the gradient
  pf::FeedDict feeds;
  bool has_variables = false;

  pf::Output Pick(Bytes& in) { return values[in.Below(static_cast<int>(values.size()))]; }

  void Step(Bytes& in) {
    pf::Scope s = root;
    const uint8_t device = in.Next();
    if (device & 0x80) s = s.WithDevice((device & 1) ? "/cpu:1" : "/cpu:0");
    const int op = in.Below(values.empty() ? 4 : 40);
    if (op < 4) return AddSource(s, op, in);
    if (op < 14) return AddCombination(s, op, in);
    if (op < 24) return AddUnary(s, op, in);
    AddOther(s, op, in);
  }

  // The graph's sources: constants, a placeholder (fed), a variable.
  void AddSource(const pf::Scope& s, int op, Bytes& in) {
    switch (op) {
      case 0: {  // float constant
        pf::Output c = pf::ops::Const(s, FloatTensor(in, SmallDims(in)));
        values.push_back(c);
        float_inputs.push_back(c);
        return;
      }
      case 1: {  // int32 constant
        std::vector<int64_t> dims = SmallDims(in);
        pf::Tensor t(pf::DT_INT32, pf::Shape::FromDims(dims).ValueOrThrow());
        for (int32_t& v : t.flat<int32_t>()) v = static_cast<int8_t>(in.Next()) % 6;
        values.push_back(pf::ops::Const(s, t));
        return;
      }
      case 2: {  // placeholder: unknown rank, or dims that may be unknown; a fed value that
                 // may disagree with them
        pf::Shape shape = pf::Shape::Unknown();
        std::vector<int64_t> fed = SmallDims(in);
        if (in.Bool()) {
          std::vector<int64_t> dims = fed;
          for (int64_t& d : dims) {
            if (in.Bool()) d = -1;
          }
          shape = pf::Shape::FromDims(dims).ValueOrThrow();
        }
        if (in.Below(8) == 0) fed = SmallDims(in);
        pf::Output p = pf::ops::Placeholder(s, pf::DT_FLOAT, shape);
        feeds.emplace_back(p, FloatTensor(in, fed));
        values.push_back(p);
        float_inputs.push_back(p);
        return;
      }
      case 3: {  // a variable
        pf::Variable v = pf::GetVariable(s, "v" + std::to_string(values.size()),
                                         pf::Shape::FromDims(SmallDims(in)).ValueOrThrow(),
                                         pf::init::Constant(in.Below(5) - 2));
        has_variables = true;
        values.push_back(v.value());
        float_inputs.push_back(v.value());
        return;
      }
    }
  }

  // Ops combining values: elementwise binary ops, MatMul, Reshape, Slice, Concat, the
  // reductions.
  void AddCombination(const pf::Scope& s, int op, Bytes& in) {
    switch (op) {
      case 4:
        values.push_back(pf::ops::Add(s, Pick(in), Pick(in)));
        return;
      case 5:
        values.push_back(pf::ops::Sub(s, Pick(in), Pick(in)));
        return;
      case 6:
        values.push_back(pf::ops::Mul(s, Pick(in), Pick(in)));
        return;
      case 7:
        values.push_back(pf::ops::Div(s, Pick(in), Pick(in)));
        return;
      case 8:
        values.push_back(pf::ops::Maximum(s, Pick(in), Pick(in)));
        return;
      case 9: {
        pf::Output a = Pick(in), b = Pick(in);
        const bool ta = in.Bool(), tb = in.Bool();
        values.push_back(pf::ops::MatMul(s, a, b, ta, tb));
        return;
      }
      case 10:
        values.push_back(pf::ops::Reshape(s, Pick(in), SmallInts(in, -1, 6)));
        return;
      case 11: {
        pf::Output x = Pick(in);
        std::vector<int32_t> begin = SmallInts(in, 0, 4), size = SmallInts(in, -1, 4);
        values.push_back(pf::ops::Slice(s, x, begin, size));
        return;
      }
      case 12: {
        std::vector<pf::Output> parts(1 + in.Below(3));
        for (pf::Output& p : parts) p = Pick(in);
        values.push_back(pf::ops::Concat(s, parts, in.Below(7) - 3));
        return;
      }
      case 13: {
        pf::Output x = Pick(in);
        std::vector<int32_t> axes = SmallInts(in, -3, 3);
        const int which = in.Below(4);
        const bool keep = in.Bool();
        values.push_back(which == 0   ? pf::ops::Sum(s, x, axes, keep)
                         : which == 1 ? pf::ops::Mean(s, x, axes, keep)
                         : which == 2 ? pf::ops::Max(s, x, axes, keep)
                                      : pf::ops::Min(s, x, axes, keep));
        return;
      }
    }
  }

  // Elementwise unary ops, Softmax, LogSoftmax and Transpose.
  void AddUnary(const pf::Scope& s, int op, Bytes& in) {
    switch (op) {
      case 14:
        values.push_back(pf::ops::Relu(s, Pick(in)));
        return;
      case 15:
        values.push_back(pf::ops::Softmax(s, Pick(in)));
        return;
      case 16:
        values.push_back(pf::ops::LogSoftmax(s, Pick(in)));
        return;
      case 17:
        values.push_back(pf::ops::Transpose(s, Pick(in), SmallInts(in, -1, 3)));
        return;
      case 18:
        values.push_back(pf::ops::Tanh(s, Pick(in)));
        return;
      case 19:
        values.push_back(pf::ops::Sigmoid(s, Pick(in)));
        return;
      case 20:
        values.push_back(pf::ops::Exp(s, Pick(in)));
        return;
      case 21:
        values.push_back(pf::ops::Log(s, Pick(in)));
        return;
      case 22:
        values.push_back(pf::ops::Sqrt(s, Pick(in)));
        return;
      case 23:
        values.push_back(pf::ops::Square(s, Pick(in)));
        return;
    }
  }

  // Shape ops, casts, gathers, losses; anything past the list is an Identity.
  void AddOther(const pf::Scope& s, int op, Bytes& in) {
    switch (op) {
      case 24:
        values.push_back(pf::ops::ExpandDims(s, Pick(in), in.Below(9) - 4));
        return;
      case 25: {
        pf::Output x = Pick(in);
        std::vector<int64_t> axes;
        for (int32_t a : SmallInts(in, -3, 3)) axes.push_back(a);
        values.push_back(pf::ops::Squeeze(s, x, axes));
        return;
      }
      case 26: {
        pf::Output x = Pick(in);
        const int axis = in.Below(7) - 3, n = 1 + in.Below(3);
        for (pf::Output part : pf::ops::Split(s, x, axis, n)) values.push_back(part);
        return;
      }
      case 27: {
        pf::Output x = Pick(in);
        values.push_back(pf::ops::Cast(s, x, in.Bool() ? pf::DT_INT32 : pf::DT_FLOAT));
        return;
      }
      case 28:
        values.push_back(pf::ops::BiasAdd(s, Pick(in), Pick(in)));
        return;
      case 29: {
        std::vector<pf::Output> parts(1 + in.Below(3));
        for (pf::Output& p : parts) p = Pick(in);
        values.push_back(pf::ops::AddN(s, parts));
        return;
      }
      case 30:
        values.push_back(pf::ops::Gather(s, Pick(in), Pick(in)));
        return;
      case 31: {
        pf::Output x = Pick(in);
        values.push_back(pf::ops::OneHot(s, x, in.Below(6)));
        return;
      }
      case 32: {
        pf::Output x = Pick(in);
        values.push_back(pf::ops::ArgMax(s, x, in.Below(7) - 3, pf::DT_INT32));
        return;
      }
      case 33:
        values.push_back(pf::ops::Shape(s, Pick(in)));
        return;
      case 34:
        values.push_back(pf::ops::Reshape(s, Pick(in), Pick(in)));
        return;
      case 35:
        values.push_back(pf::ops::StopGradient(s, Pick(in)));
        return;
      case 36:
        values.push_back(pf::ops::Pow(s, Pick(in), Pick(in)));
        return;
      case 37: {
        pf::Output x = Pick(in);
        values.push_back(pf::ops::SparseSoftmaxCrossEntropyWithLogits(s, x, Pick(in)).first);
        return;
      }
      case 38:
        values.push_back(pf::ops::L2Loss(s, Pick(in)));
        return;
      default:
        values.push_back(pf::ops::Identity(s, Pick(in)));
        return;
    }
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pf::SetLogLevel("error");  // soft-placement fallbacks would flood the output
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Bytes in(data, size);
  Program p;
  for (int step = 0; step < kMaxSteps && !in.empty() && p.values.size() < kMaxValues; ++step) {
    try {
      p.Step(in);
    } catch (const pf::Error&) {
      // An op the shapes or attributes do not allow: TensorFlow raises at build time too.
    }
  }
  if (p.values.empty()) return 0;

  // The gradient of the last float value (summed, as a loss would be) with respect to every
  // constant, placeholder and variable; a weighted seed when the input says so.
  std::vector<pf::Output> fetches = p.values;
  pf::Output y = p.values.back();
  if (y.dtype() == pf::DT_FLOAT && !p.float_inputs.empty()) {
    std::vector<pf::Output> grad_ys;
    if (in.Bool()) {
      try {
        grad_ys.push_back(pf::ops::OnesLike(p.root, y));
      } catch (const pf::Error&) {
      }
    }
    try {
      auto grads = pf::internal::TryGradients(p.root, {y}, p.float_inputs, grad_ys);
      if (grads.ok()) {
        for (const pf::Output& g : *grads) {
          if (g.node != nullptr) fetches.push_back(g);
        }
      }
    } catch (const pf::Error&) {
      // TryGradients returns its errors; one that throws is worth a look but is no crash.
    }
  }

  pf::SessionOptions options;
  options.device_count["CPU"] = 2;
  options.allow_soft_placement = true;
  pf::Session session(p.graph, options);
  std::vector<pf::Tensor> outputs;
  if (p.has_variables) {
    try {
      pf::Operation init = pf::GlobalVariablesInitializer(p.root);
      if (!session.TryRun({}, {}, {init}, &outputs).ok()) return 0;
    } catch (const pf::Error&) {
      return 0;
    }
  }
  // Everything at once, then the last value alone (a second, pruned signature).
  (void)session.TryRun(p.feeds, fetches, {}, &outputs);
  (void)session.TryRun(p.feeds, {p.values.back()}, {}, &outputs);
  return 0;
}
