// Half and bfloat16 CPU kernels for the ops of mixed precision (matmuls, convolutions, bias
// gradients, activations, pooling, batch norm, softmax and its cross-entropy, AddN) that have a
// float one (BiasAdd, Relu and ReluGrad convert element by element instead: nn_ops.cc):
// each call converts the 16-bit inputs to float, runs the op's float kernel on them and rounds
// its 16-bit outputs back to nearest even, as the elementwise ops' 16-bit kernels do
// (cwise_ops.cc). So a result is the float kernel's on the rounded inputs, rounded once; the
// float accumulation is what TF's and PyTorch's CPU kernels give their half inputs too. The
// first such kernel of each op logs a one-time warning: on a CPU this is for correctness and
// memory, not speed (docs/mixed_precision.md).
#include "placeflow/ops/half_via_float.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include <bit>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "placeflow/core/logging.h"
#include "placeflow/graph/kernel.h"
#include "placeflow/graph/op_registry.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/simd/cpu_isa.h"

namespace pf {
namespace {

bool Is16Bit(DType t) { return t == DT_HALF || t == DT_BFLOAT16; }

// The scalar conversions, for the F16C loops' tails and CPUs without F16C.
void WidenTo(const Half* in, float* out, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) out[i] = ToFloat(in[i]);
}
void NarrowTo(const float* in, Half* out, int64_t b, int64_t e) {
  for (int64_t i = b; i < e; ++i) out[i] = FromFloat<Half>(in[i]);
}

#if defined(__x86_64__)
// half <-> float with F16C, 8 at a time: the same values as HalfToFloat and FloatToHalf (both
// round to nearest even; only NaN payloads may differ), 5x faster than their scalar code.
__attribute__((target("avx,f16c"))) void WidenHalfF16c(const Half* in, float* out, int64_t b,
                                                       int64_t e) {
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  WidenTo(in, out, i, e);
}
__attribute__((target("avx,f16c"))) void NarrowHalfF16c(const float* in, Half* out, int64_t b,
                                                        int64_t e) {
  int64_t i = b;
  for (; i + 8 <= e; i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  NarrowTo(in, out, i, e);
}
#endif

// F16C where the CPU has it and PF_MAX_CPU_ISA allows AVX2 (an SSE4 cap runs the scalar code).
bool UseF16c() {
#if defined(__x86_64__)
  static const bool f16c = [] {  // CPUID leaf 1 (clang's __builtin_cpu_supports lacks "f16c")
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
  }();
  return f16c && simd::ActiveCpuIsa() >= simd::CpuIsa::kAvx2;
#else
  return false;
#endif
}

void WidenHalf(const Half* in, float* out, int64_t b, int64_t e) {
#if defined(__x86_64__)
  if (UseF16c()) return WidenHalfF16c(in, out, b, e);
#endif
  WidenTo(in, out, b, e);
}

void NarrowHalf(const float* in, Half* out, int64_t b, int64_t e) {
#if defined(__x86_64__)
  if (UseF16c()) return NarrowHalfF16c(in, out, b, e);
#endif
  NarrowTo(in, out, b, e);
}

// bfloat16 <-> float as BFloat16ToFloat and FloatToBFloat16 compute them, branch-free so that
// SimdFor's clones vectorise them (the scalar functions' NaN branch kept them scalar: the two
// conversions were 28% of a bfloat16 LeNet step).
void WidenBf16(const BFloat16* in, float* out, int64_t b, int64_t e) {
  SimdFor(b, e, [&](int64_t i) { out[i] = std::bit_cast<float>(uint32_t{in[i].bits} << 16); });
}
void NarrowBf16(const float* in, BFloat16* out, int64_t b, int64_t e) {
  SimdFor(b, e, [&](int64_t i) {
    const uint32_t u = std::bit_cast<uint32_t>(in[i]);
    const uint32_t rounded = (u + 0x7fff + ((u >> 16) & 1)) >> 16;
    const uint32_t nan = (u >> 16) | 0x40;
    out[i].bits = static_cast<uint16_t>((u & 0x7fffffff) > 0x7f800000 ? nan : rounded);
  });
}

// `in` (half or bfloat16) as a new float tensor.
StatusOr<Tensor> WidenTensor(OpKernelContext* ctx, const Tensor& in) {
  PF_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(ctx->params().allocator, DT_FLOAT, in.shape()));
  float* y = out.data<float>();
  ParallelFor(ctx, in.num_elements(), 2, [&](int64_t b, int64_t e) {
    if (in.dtype() == DT_HALF) {
      WidenHalf(in.data<Half>(), y, b, e);
    } else {
      WidenBf16(in.data<BFloat16>(), y, b, e);
    }
  });
  return out;
}

void NarrowTensor(OpKernelContext* ctx, const Tensor& in, Tensor* out) {
  const float* x = in.data<float>();
  ParallelFor(ctx, in.num_elements(), 2, [&](int64_t b, int64_t e) {
    if (out->dtype() == DT_HALF) {
      NarrowHalf(x, out->data<Half>(), b, e);
    } else {
      NarrowBf16(x, out->data<BFloat16>(), b, e);
    }
  });
}

DType FloatFor(DType t) { return Is16Bit(t) ? DT_FLOAT : t; }

void WarnOnce(const Node& node) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::string key = node.op();
  for (const auto& [name, value] : node.attrs()) {
    if (const DType* t = std::get_if<DType>(&value); t != nullptr && Is16Bit(*t)) {
      key += ' ';
      key += DTypeName(*t);
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  if (!warned.insert(key).second) return;
  PF_LOG_WARN(
      "{} on a CPU computes in float32: its 16-bit inputs are converted to float and its outputs "
      "rounded back on every call (node '{}'; docs/mixed_precision.md)",
      key, node.name());
}

// The op's float kernel on a copy of the node whose 16-bit types are float. The copy lives in
// a graph of its own, its inputs placeholders of the original inputs' float shapes and types, so
// that a float kernel's constructor sees what it would see in a float graph.
class HalfViaFloatOp : public OpKernel {
 public:
  explicit HalfViaFloatOp(const Node& node) : OpKernel(node) {
    const OpDef* placeholder = OpRegistry::Global()->Find("Placeholder");
    NodeSpec spec;
    spec.name = node.name();
    spec.op_def = &node.op_def();
    for (const auto& [name, value] : node.attrs()) {
      const DType* t = std::get_if<DType>(&value);
      spec.attrs[name] = t != nullptr ? AttrValue(FloatFor(*t)) : value;
    }
    for (int i = 0; i < node.num_inputs(); ++i) {
      const Output& in = node.input(i);
      const DType t = FloatFor(in.dtype());
      NodeSpec p;
      p.name = "input_" + std::to_string(i);
      p.op_def = placeholder;
      p.attrs = {{"dtype", t}, {"shape", in.shape()}};
      p.output_dtypes = {t};
      p.output_shapes = {in.shape()};
      spec.inputs.push_back(Output(graph_.AddNode(std::move(p)), 0));
    }
    for (int i = 0; i < node.num_outputs(); ++i) {
      spec.output_dtypes.push_back(FloatFor(node.output_dtype(i)));
      spec.output_shapes.push_back(node.output_shape(i));
    }
    Node* copy = graph_.AddNode(std::move(spec));
    copy->set_assigned_device(node.assigned_device());
    auto inner = KernelRegistry::Global()->Create(*copy, kDeviceCpu);
    if (inner.ok()) {
      inner_ = std::move(*inner);
    } else {
      status_ = inner.status();
    }
    WarnOnce(node);
  }

  bool IsExpensive() const override { return inner_ == nullptr || inner_->IsExpensive(); }

  Status Compute(OpKernelContext* ctx) override {
    PF_RETURN_IF_ERROR(status_);
    std::vector<Tensor> inputs(ctx->num_inputs());
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      const Tensor& in = ctx->input(i);
      if (Is16Bit(in.dtype())) {
        PF_ASSIGN_OR_RETURN(inputs[i], WidenTensor(ctx, in));
      } else {
        inputs[i] = in;
      }
    }
    const int n = ctx->num_outputs();
    std::vector<Tensor> outputs(n);
    std::vector<DType> dtypes(n);
    for (int i = 0; i < n; ++i) dtypes[i] = FloatFor(ctx->output_dtype(i));
    OpKernelContext::Params p = ctx->params();
    p.inputs = inputs.data();
    p.outputs = outputs.data();
    p.output_dtypes = dtypes.data();
    p.kernel = inner_.get();
    OpKernelContext inner_ctx(p);
    PF_RETURN_IF_ERROR(inner_->Compute(&inner_ctx));
    for (int i = 0; i < n; ++i) {
      if (!outputs[i].IsInitialized()) continue;
      if (!Is16Bit(ctx->output_dtype(i))) {
        PF_RETURN_IF_ERROR(ctx->SetOutput(i, std::move(outputs[i])));
        continue;
      }
      PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(i));
      NarrowTensor(ctx, outputs[i], out);
    }
    if (ctx->tracing()) {
      std::string label = "float32 compute";
      if (!ctx->trace_label()->empty()) label += ", " + *ctx->trace_label();
      ctx->SetTraceLabel(std::move(label));
    }
    return Status::OK();
  }

 private:
  Graph graph_;
  std::unique_ptr<OpKernel> inner_;
  Status status_;
};

const std::vector<DType> k16BitTypes = {DT_HALF, DT_BFLOAT16};

#define PF_HALF_VIA_FLOAT(op) \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", k16BitTypes), HalfViaFloatOp)
#define PF_HALF_ONLY_VIA_FLOAT(op) \
  PF_REGISTER_KERNEL(KernelDef(op, kDeviceCpu).TypeConstraint("T", {DT_HALF}), HalfViaFloatOp)
// MatMul and _FusedMatMul in bfloat16 run on oneDNN where the CPU can (ops/nn/fused_matmul.cc).
PF_HALF_ONLY_VIA_FLOAT("MatMul");
PF_HALF_ONLY_VIA_FLOAT("_FusedMatMul");
// The convolutions in bfloat16 run on oneDNN where the CPU can (ops/nn/conv_kernels.cc).
PF_HALF_ONLY_VIA_FLOAT("Conv2D");
PF_HALF_ONLY_VIA_FLOAT("Conv2DBackpropInput");
PF_HALF_ONLY_VIA_FLOAT("Conv2DBackpropFilter");
PF_HALF_ONLY_VIA_FLOAT("DepthwiseConv2dNative");
PF_HALF_ONLY_VIA_FLOAT("DepthwiseConv2dNativeBackpropInput");
PF_HALF_ONLY_VIA_FLOAT("DepthwiseConv2dNativeBackpropFilter");
PF_HALF_VIA_FLOAT("BiasAddGrad");
PF_HALF_VIA_FLOAT("Relu6");
PF_HALF_VIA_FLOAT("Relu6Grad");
PF_HALF_VIA_FLOAT("LeakyRelu");
PF_HALF_VIA_FLOAT("LeakyReluGrad");
PF_HALF_VIA_FLOAT("Softplus");
PF_HALF_VIA_FLOAT("SoftplusGrad");
PF_HALF_VIA_FLOAT("Sigmoid");
PF_HALF_VIA_FLOAT("SigmoidGrad");
PF_HALF_VIA_FLOAT("Tanh");
PF_HALF_VIA_FLOAT("TanhGrad");
PF_HALF_VIA_FLOAT("Softmax");
PF_HALF_VIA_FLOAT("LogSoftmax");
PF_HALF_VIA_FLOAT("MaxPool");
PF_HALF_VIA_FLOAT("AvgPool");
PF_HALF_VIA_FLOAT("MaxPoolGrad");
PF_HALF_VIA_FLOAT("AvgPoolGrad");
PF_HALF_VIA_FLOAT("SoftmaxCrossEntropyWithLogits");
PF_HALF_VIA_FLOAT("SparseSoftmaxCrossEntropyWithLogits");
PF_HALF_VIA_FLOAT("AddN");
PF_HALF_VIA_FLOAT("SumToShape");  // the gradients of broadcasting ops
PF_HALF_VIA_FLOAT("ReduceGrad");
// Batch norm keeps its statistics (type U) in float, as TF's FusedBatchNormV3 with T=half.
PF_REGISTER_KERNEL(KernelDef("FusedBatchNorm", kDeviceCpu)
                       .TypeConstraint("T", k16BitTypes)
                       .TypeConstraint("U", {DT_FLOAT}),
                   HalfViaFloatOp);
PF_REGISTER_KERNEL(KernelDef("FusedBatchNormGrad", kDeviceCpu)
                       .TypeConstraint("T", k16BitTypes)
                       .TypeConstraint("U", {DT_FLOAT}),
                   HalfViaFloatOp);
#undef PF_HALF_VIA_FLOAT
#undef PF_HALF_ONLY_VIA_FLOAT

}  // namespace

std::unique_ptr<OpKernel> NewHalfViaFloatKernel(const Node& node) {
  return std::make_unique<HalfViaFloatOp>(node);
}

}  // namespace pf
