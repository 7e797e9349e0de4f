// Ops that only change the view of a buffer: Reshape, ExpandDims, Squeeze; and Shape itself.
#include <limits>
#include <string>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"

namespace pf {
namespace {

class ForwardOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override { return ctx->ForwardInput(0, 0); }
  bool IsExpensive() const override { return false; }
};

// Reshape, ExpandDims, Squeeze: the gradient takes the input's shape back.
PF_GRAD(ReshapeGrad) {
  Grads out(n.num_inputs());
  out[0] = ops::Reshape(s, g[0], ops::Shape(s, n.input(0)));
  *dx = out;
  return Status::OK();
}

Status ReshapeShape(ShapeContext& c) {
  PF_ASSIGN_OR_RETURN(Shape target, c.ShapeFromInputTensor(1));
  if (target.unknown_rank()) {
    c.set_output(0, target);
    return Status::OK();
  }
  // At most one -1, inferred from the input's element count when known.
  int unknown = -1;
  int64_t known = 1;
  bool overflow = false;  // checked: a product that wraps could match the input's size
  bool all_known = c.input_tensor(1) != nullptr;
  for (int i = 0; i < target.rank(); ++i) {
    if (target.dim(i) == -1) {
      if (unknown >= 0 && all_known)
        return errors::InvalidArgument("Cannot infer multiple unknown dimensions in shape ",
                                       target.ToString());
      unknown = i;
    } else {
      overflow = overflow || __builtin_mul_overflow(known, target.dim(i), &known);
    }
  }
  const int64_t n = c.input(0).num_elements();
  if (overflow && known != 0) {
    return errors::InvalidArgument("Cannot reshape a tensor with ",
                                   n >= 0 ? std::to_string(n) : std::string("?"),
                                   " elements to shape ", target.ToString(), ": more than ",
                                   std::numeric_limits<int64_t>::max(), " elements");
  }
  if (all_known && n >= 0) {
    if (unknown >= 0) {
      if (known == 0 || n % known != 0) {
        return errors::InvalidArgument("Cannot reshape a tensor with ", n, " elements to shape ",
                                       target.ToString());
      }
      target.set_dim(unknown, n / known);
    } else if (known != n) {
      return errors::InvalidArgument("Cannot reshape a tensor with ", n, " elements to shape ",
                                     target.ToString(), " (", known, " elements)");
    }
  }
  c.set_output(0, target);
  return Status::OK();
}

// Reshape, ExpandDims and Squeeze only relabel a buffer: every numeric dtype (uint8 images too).
std::vector<DType> ShapeOpTypes() {
  std::vector<DType> types = kRealNumberTypes;
  types.push_back(DT_BOOL);
  return types;
}

PF_REGISTER_OP(OpDef("Reshape")
                   .SetForwardsInput()
                   .Input("tensor", "T")
                   .Input("shape", "Tshape")
                   .Output("output", "T")
                   .TypeAttr("T", ShapeOpTypes())
                   .TypeAttr("Tshape", kIndexTypes, DT_INT32)
                   .SetGradient(ReshapeGrad)
                   .SetShapeFn(ReshapeShape));
PF_REGISTER_KERNEL(KernelDef("Reshape", kDeviceCpu).HostMemory("shape"), ForwardOp);

PF_REGISTER_OP(OpDef("ExpandDims")
                   .SetForwardsInput()
                   .Input("input", "T")
                   .Output("output", "T")
                   .Attr("axis", int64_t{0})
                   .TypeAttr("T", ShapeOpTypes())
                   .SetGradient(ReshapeGrad)
                   .SetShapeFn([](ShapeContext& c) {
                     Shape in = c.input(0);
                     if (in.unknown_rank()) return (c.set_output(0, in), Status::OK());
                     PF_ASSIGN_OR_RETURN(int axis,
                                         c.CanonicalAxis(c.attr<int64_t>("axis"), in.rank() + 1));
                     in.InsertDim(axis, 1);
                     c.set_output(0, in);
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("ExpandDims", kDeviceCpu), ForwardOp);

PF_REGISTER_OP(OpDef("Squeeze")
                   .SetForwardsInput()
                   .Input("input", "T")
                   .Output("output", "T")
                   .Attr("squeeze_dims", std::vector<int64_t>{})
                   .TypeAttr("T", ShapeOpTypes())
                   .SetGradient(ReshapeGrad)
                   .SetShapeFn([](ShapeContext& c) {
                     const Shape& in = c.input(0);
                     if (in.unknown_rank()) return (c.set_output(0, in), Status::OK());
                     std::vector<bool> drop(in.rank(), false);
                     const auto& axes = c.attr<std::vector<int64_t>>("squeeze_dims");
                     for (int64_t a : axes) {
                       PF_ASSIGN_OR_RETURN(int axis, c.CanonicalAxis(a, in.rank()));
                       if (in.dim(axis) != 1 && in.dim(axis) != -1) {
                         return errors::InvalidArgument("Can not squeeze dim[", axis,
                                                        "], expected a dimension of 1, got ",
                                                        in.dim(axis));
                       }
                       drop[axis] = true;
                     }
                     Shape out;
                     for (int i = 0; i < in.rank(); ++i) {
                       if (axes.empty() && in.dim(i) == -1) {
                         if (c.input_tensor(0) == nullptr)
                           return (c.set_output(0, Shape::Unknown()), Status::OK());
                       }
                       bool squeeze = axes.empty() ? in.dim(i) == 1 : drop[i];
                       if (!squeeze) out.AddDim(in.dim(i));
                     }
                     c.set_output(0, out);
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("Squeeze", kDeviceCpu), ForwardOp);

template <typename TOut>
class ShapeOp : public OpKernel {
 public:
  using OpKernel::OpKernel;
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(Tensor * out, ctx->AllocateOutput(0));
    const Shape& s = ctx->input(0).shape();
    for (int i = 0; i < s.rank(); ++i) out->data<TOut>()[i] = static_cast<TOut>(s.dim(i));
    return Status::OK();
  }
  bool IsExpensive() const override { return false; }
};

PF_REGISTER_OP(OpDef("Shape")
                   .SetIsMetadata()
                   .Input("input", "T")
                   .Output("output", "out_type")
                   .TypeAttr("T", kNonStringTypes)  // reads the shape only
                   .TypeAttr("out_type", kIndexTypes, DT_INT32)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     const Shape& in = c.input(0);
                     c.set_output(0, in.unknown_rank() ? Shape{-1} : Shape{in.rank()});
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("Shape", kDeviceCpu).TypeConstraint("out_type", {DT_INT32}),
                   ShapeOp<int32_t>);
PF_REGISTER_KERNEL(KernelDef("Shape", kDeviceCpu).TypeConstraint("out_type", {DT_INT64}),
                   ShapeOp<int64_t>);
// On GPUs these only relabel the buffer; shapes are read and written in host memory.
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("Reshape", kDeviceGpu).HostMemory("shape"), ForwardOp);
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("ExpandDims", kDeviceGpu), ForwardOp);
PF_REGISTER_KERNEL_WITH_BACKEND(KernelDef("Squeeze", kDeviceGpu), ForwardOp);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("Shape", kDeviceGpu).TypeConstraint("out_type", {DT_INT32}).HostMemory("output"),
    ShapeOp<int32_t>);
PF_REGISTER_KERNEL_WITH_BACKEND(
    KernelDef("Shape", kDeviceGpu).TypeConstraint("out_type", {DT_INT64}).HostMemory("output"),
    ShapeOp<int64_t>);

}  // namespace

namespace ops {

Output Reshape(const Scope& s, Output x, Output shape) {
  return NodeBuilder(s, "Reshape").Input(x).Input(shape).Finalize();
}
Output Reshape(const Scope& s, Output x, const std::vector<int32_t>& shape) {
  return Reshape(
      s, x, ConstInt(s.WithOpName(s.Qualify("Reshape/shape")).WithNoControlDependencies(), shape));
}
Output ExpandDims(const Scope& s, Output x, int axis) {
  return NodeBuilder(s, "ExpandDims").Input(x).Attr("axis", int64_t{axis}).Finalize();
}
Output Squeeze(const Scope& s, Output x, const std::vector<int64_t>& axes) {
  return NodeBuilder(s, "Squeeze").Input(x).Attr("squeeze_dims", axes).Finalize();
}
Output Shape(const Scope& s, Output x, DType out_type) {
  return NodeBuilder(s, "Shape").Input(x).Attr("out_type", out_type).Finalize();
}

}  // namespace ops
}  // namespace pf
