// ParseExampleDense and ParseExampleVarLen: tf.io.parse_example, one node per feature (see
// parse_ops.h). Built only with PF_WITH_PROTOBUF.
#include "placeflow/io/example.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/parse/parse_ops.h"

namespace pf {
namespace {

const std::vector<DType> kExampleTypes = {DT_FLOAT, DT_INT64, DT_STRING};

// Serialized examples: a vector (a batch) or a scalar (one example, no batch dimension).
Status CheckSerialized(ShapeContext& c) {
  if (!c.input(0).unknown_rank() && c.input(0).rank() > 1) {
    return errors::InvalidArgument(
        "ParseExample takes a scalar or a vector of serialized "
        "examples, got shape ",
        c.input(0).ToString());
  }
  return Status::OK();
}

std::vector<int64_t> BatchDims(const Shape& serialized) {
  if (serialized.unknown_rank()) return {-1};
  return std::vector<int64_t>(serialized.dims().begin(), serialized.dims().end());
}

// Parses the node's one feature out of the input's serialized examples.
StatusOr<io::ParsedExamples> ParseOne(OpKernelContext* ctx, const io::ExampleSpec& spec) {
  const Tensor& in = ctx->input(0);
  std::span<const std::string> serialized(in.data<std::string>(),
                                          static_cast<size_t>(in.num_elements()));
  if (in.rank() == 0) return io::ParseSingleExample(serialized[0], spec);
  return io::ParseExamples(serialized, spec);
}

class ParseExampleDenseOp : public OpKernel {
 public:
  explicit ParseExampleDenseOp(const Node& n) : OpKernel(n) {
    spec_.fixed.push_back(
        {n.attr<std::string>("key"), n.attr<DType>("T"), n.attr<Shape>("shape"), Tensor()});
  }
  Status Compute(OpKernelContext* ctx) override {
    io::ExampleSpec spec = spec_;
    const Tensor& def = ctx->input(1);
    if (def.num_elements() > 0) spec.fixed[0].default_value = def;  // empty: required
    PF_ASSIGN_OR_RETURN(io::ParsedExamples p, ParseOne(ctx, spec));
    return ctx->SetOutput(0, std::move(p.dense[0]));
  }

 private:
  io::ExampleSpec spec_;
};

class ParseExampleVarLenOp : public OpKernel {
 public:
  explicit ParseExampleVarLenOp(const Node& n) : OpKernel(n) {
    spec_.var_len.push_back({n.attr<std::string>("key"), n.attr<DType>("T")});
  }
  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(io::ParsedExamples p, ParseOne(ctx, spec_));
    io::SparseValues& sv = p.sparse[0];
    PF_RETURN_IF_ERROR(ctx->SetOutput(0, std::move(sv.indices)));
    PF_RETURN_IF_ERROR(ctx->SetOutput(1, std::move(sv.values)));
    return ctx->SetOutput(2, std::move(sv.dense_shape));
  }

 private:
  io::ExampleSpec spec_;
};

PF_REGISTER_OP(OpDef("ParseExampleDense")
                   .Input("serialized", "string")
                   .Input("default_value", "T")  // empty ([0]): the feature is required
                   .Output("values", "T")
                   .RequiredAttr("key")
                   .TypeAttr("T", kExampleTypes)
                   .RequiredAttr("shape")
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(CheckSerialized(c));
                     std::vector<int64_t> dims = BatchDims(c.input(0));
                     for (int64_t d : c.attr<Shape>("shape").dims()) dims.push_back(d);
                     PF_ASSIGN_OR_RETURN(Shape out, Shape::FromDims(dims));
                     c.set_output(0, out);
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("ParseExampleDense", kDeviceCpu), ParseExampleDenseOp);

PF_REGISTER_OP(OpDef("ParseExampleVarLen")
                   .Input("serialized", "string")
                   .Output("indices", "int64")
                   .Output("values", "T")
                   .Output("dense_shape", "int64")
                   .RequiredAttr("key")
                   .TypeAttr("T", kExampleTypes)
                   .SetNotDifferentiable()
                   .SetShapeFn([](ShapeContext& c) {
                     PF_RETURN_IF_ERROR(CheckSerialized(c));
                     const int64_t rank =
                         c.input(0).unknown_rank() ? 2 : (c.input(0).rank() == 0 ? 1 : 2);
                     c.set_output(0, Shape{-1, rank});
                     c.set_output(1, Shape{-1});
                     c.set_output(2, Shape{rank});
                     return Status::OK();
                   }));
PF_REGISTER_KERNEL(KernelDef("ParseExampleVarLen", kDeviceCpu), ParseExampleVarLenOp);

}  // namespace

namespace ops {

ParsedExampleOutputs ParseExample(const Scope& s, Output serialized, const io::ExampleSpec& spec) {
  Status valid = io::ValidateExampleSpec(spec);
  if (!valid.ok()) throw Error(valid);
  ParsedExampleOutputs out;
  for (const io::FixedLenFeature& f : spec.fixed) {
    Tensor def = f.default_value.IsInitialized() ? f.default_value : Tensor(f.dtype, {0});
    out.dense.push_back(NodeBuilder(s, "ParseExampleDense")
                            .Input(serialized)
                            .Input(Const(s, def))
                            .Attr("key", f.key)
                            .Attr("T", f.dtype)
                            .Attr("shape", f.shape)
                            .Finalize());
  }
  for (const io::VarLenFeature& f : spec.var_len) {
    Node* n = NodeBuilder(s, "ParseExampleVarLen")
                  .Input(serialized)
                  .Attr("key", f.key)
                  .Attr("T", f.dtype)
                  .Finalize();
    out.sparse_indices.emplace_back(n, 0);
    out.sparse_values.emplace_back(n, 1);
    out.sparse_shapes.emplace_back(n, 2);
  }
  return out;
}

}  // namespace ops
}  // namespace pf
