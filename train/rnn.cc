#include "placeflow/train/rnn.h"

#include "placeflow/ops/control_flow.h"
#include "placeflow/ops/everyday_ops.h"
#include "placeflow/ops/ops.h"
#include "placeflow/train/variables.h"

namespace pf::layers {
namespace {

// [x, h] W + b.
Output Affine(const Scope& s, Output x, Output h, const Variable& w, const Variable& b) {
  return ops::BiasAdd(s, ops::MatMul(s, ops::Concat(s, {x, h}, 1), w.value()), b.value());
}

void CheckBuilt(const std::string& name, bool built) {
  if (!built) ThrowError(errors::FailedPrecondition("RNN cell '", name, "' used before Build"));
}

}  // namespace

LSTMCell::LSTMCell(std::string name, int64_t units, float forget_bias, int64_t seed)
    : name_(std::move(name)), units_(units), forget_bias_(forget_bias), seed_(seed) {
  if (units <= 0)
    ThrowError(errors::InvalidArgument("LSTMCell '", name_, "': units must be positive"));
}

void LSTMCell::Build(const Scope& s, int64_t depth, DType dtype) {
  if (kernel_) return;
  const Scope vs = s.WithVariableScope(name_);
  kernel_ =
      GetVariable(vs, "kernel", {depth + units_, 4 * units_}, init::GlorotUniform(seed_), dtype);
  bias_ = GetVariable(vs, "bias", {4 * units_}, init::Zeros(), dtype);
}

std::vector<Output> LSTMCell::Step(const Scope& s, Output x, const std::vector<Output>& state,
                                   Output* output) {
  CheckBuilt(name_, kernel_.has_value());
  const Scope cs = s.NewSubScope(name_);
  const Output& c = state[0];
  const Output& h = state[1];
  std::vector<Output> gates = ops::Split(cs, Affine(cs, x, h, *kernel_, *bias_), 1, 4);
  const Output forget_bias = ops::Cast(cs, ops::Const(cs, forget_bias_), x.dtype());
  Output new_c =
      ops::Add(cs, ops::Mul(cs, c, ops::Sigmoid(cs, ops::Add(cs, gates[2], forget_bias))),
               ops::Mul(cs, ops::Sigmoid(cs, gates[0]), ops::Tanh(cs, gates[1])));
  Output new_h = ops::Mul(cs, ops::Tanh(cs, new_c), ops::Sigmoid(cs, gates[3]));
  *output = new_h;
  return {new_c, new_h};
}

FusedSequenceOutputs RnnCell::FusedSequence(const Scope&, Output, Output,
                                            const std::vector<Output>&) {
  ThrowError(errors::Unimplemented("This RNN cell has no fused sequence (HasFusedSequence)"));
}

// BlockLSTM has CPU kernels only.
bool LSTMCell::HasFusedSequence(const Scope& s) const {
  return !s.device().has_type || s.device().type == "CPU";
}

FusedSequenceOutputs LSTMCell::FusedSequence(const Scope& s, Output x, Output seq_len_max,
                                             const std::vector<Output>& state) {
  CheckBuilt(name_, kernel_.has_value());
  const Scope cs = s.NewSubScope(name_);
  // No peepholes: BlockLSTM's wci, wcf and wco are unread.
  Output no_peephole = ops::Const(cs, Tensor(x.dtype(), {units_}));
  ops::BlockLstmAttrs a;
  a.forget_bias = forget_bias_;
  ops::BlockLstmOutputs r =
      ops::BlockLSTM(cs, seq_len_max, x, state[0], state[1], kernel_->value(), no_peephole,
                     no_peephole, no_peephole, bias_->value(), a);
  return FusedSequenceOutputs{r.h, {r.cs, r.h}};
}

void DeviceWrapper::Build(const Scope& s, int64_t depth, DType dtype) {
  cell_->Build(s.WithDevice(device_), depth, dtype);
}

std::vector<Output> DeviceWrapper::Step(const Scope& s, Output x, const std::vector<Output>& state,
                                        Output* output) {
  return cell_->Step(s.WithDevice(device_), x, state, output);
}

bool DeviceWrapper::HasFusedSequence(const Scope& s) const {
  return cell_->HasFusedSequence(s.WithDevice(device_));
}

FusedSequenceOutputs DeviceWrapper::FusedSequence(const Scope& s, Output x, Output seq_len_max,
                                                  const std::vector<Output>& state) {
  return cell_->FusedSequence(s.WithDevice(device_), x, seq_len_max, state);
}

MultiRnnCell::MultiRnnCell(std::vector<RnnCell*> cells) : cells_(std::move(cells)) {
  if (cells_.empty()) ThrowError(errors::InvalidArgument("MultiRnnCell needs at least one cell"));
}

std::vector<int64_t> MultiRnnCell::state_sizes() const {
  std::vector<int64_t> sizes;
  for (const RnnCell* c : cells_) {
    const std::vector<int64_t> own = c->state_sizes();
    sizes.insert(sizes.end(), own.begin(), own.end());
  }
  return sizes;
}

void MultiRnnCell::Build(const Scope& s, int64_t depth, DType dtype) {
  for (RnnCell* c : cells_) {
    c->Build(s, depth, dtype);
    depth = c->output_size();
  }
}

std::vector<Output> MultiRnnCell::Step(const Scope& s, Output x, const std::vector<Output>& state,
                                       Output* output) {
  std::vector<Output> next;
  size_t at = 0;
  for (RnnCell* c : cells_) {
    const size_t n = c->state_sizes().size();
    const std::vector<Output> own(state.begin() + at, state.begin() + at + n);
    const std::vector<Output> updated = c->Step(s, x, own, &x);
    next.insert(next.end(), updated.begin(), updated.end());
    at += n;
  }
  *output = x;
  return next;
}

GRUCell::GRUCell(std::string name, int64_t units, int64_t seed)
    : name_(std::move(name)), units_(units), seed_(seed) {
  if (units <= 0)
    ThrowError(errors::InvalidArgument("GRUCell '", name_, "': units must be positive"));
}

void GRUCell::Build(const Scope& s, int64_t depth, DType dtype) {
  if (gate_kernel_) return;
  const Scope gs = s.WithVariableScope(name_).WithVariableScope("gates");
  const Scope cs = s.WithVariableScope(name_).WithVariableScope("candidate");
  // TensorFlow's GRUCell starts its gates' bias at 1 (remember, do not reset, at first).
  gate_kernel_ =
      GetVariable(gs, "kernel", {depth + units_, 2 * units_}, init::GlorotUniform(seed_), dtype);
  gate_bias_ = GetVariable(gs, "bias", {2 * units_}, init::Ones(), dtype);
  candidate_kernel_ =
      GetVariable(cs, "kernel", {depth + units_, units_}, init::GlorotUniform(seed_ + 1), dtype);
  candidate_bias_ = GetVariable(cs, "bias", {units_}, init::Zeros(), dtype);
}

std::vector<Output> GRUCell::Step(const Scope& s, Output x, const std::vector<Output>& state,
                                  Output* output) {
  CheckBuilt(name_, gate_kernel_.has_value());
  const Scope cs = s.NewSubScope(name_);
  const Output& h = state[0];
  std::vector<Output> ru =
      ops::Split(cs, ops::Sigmoid(cs, Affine(cs, x, h, *gate_kernel_, *gate_bias_)), 1, 2);
  Output c =
      ops::Tanh(cs, Affine(cs, x, ops::Mul(cs, ru[0], h), *candidate_kernel_, *candidate_bias_));
  // u h + (1 - u) c, written c + u (h - c).
  Output new_h = ops::Add(cs, c, ops::Mul(cs, ru[1], ops::Sub(cs, h, c)));
  *output = new_h;
  return {new_h};
}

namespace {

// A zero tensor [leading..., trailing...]: leading dims at run time (int32 scalars), trailing
// ones static.
Output Zeros(const Scope& s, const std::vector<Output>& leading,
             const std::vector<int32_t>& trailing, DType dtype) {
  std::vector<Output> parts;
  for (const Output& d : leading) parts.push_back(ops::Reshape(s, d, {1}));
  parts.push_back(ops::ConstInt(s, trailing));
  return ops::Fill(s, ops::Concat(s, parts, 0), ops::Cast(s, ops::Const(s, 0.f), dtype));
}

// The loop of tf.nn.dynamic_rnn over time-major x [T, B, D] from `state`: every step's output
// and the final state.
RnnOutputs LoopRnn(const Scope& rs, RnnCell& cell, Output x, std::vector<Output> state,
                   Output steps, Output batch, const std::optional<Output>& lengths,
                   int parallel_iterations) {
  const DType dtype = x.dtype();
  const int64_t static_batch = x.shape().dim(1);
  const int32_t units = static_cast<int32_t>(cell.output_size());
  std::vector<Output> vars = {ops::ConstInt(rs, 0)};
  ops::WhileOptions wo;
  wo.parallel_iterations = parallel_iterations;
  wo.shape_invariants = {pf::Shape{}};
  for (size_t k = 0; k < state.size(); ++k) {
    vars.push_back(state[k]);
    wo.shape_invariants.push_back(pf::Shape{static_batch, cell.state_sizes()[k]});
  }
  // Every step's output, [T, B, H], filled row by row in place (ops::InplaceUpdate).
  vars.push_back(Zeros(rs, {steps, batch}, {units}, dtype));
  wo.shape_invariants.push_back(pf::Shape{x.shape().dim(0), static_batch, units});
  const size_t n_state = state.size();
  std::vector<Output> out = ops::WhileLoop(
      rs, [&](const Scope& c, const std::vector<Output>& v) { return ops::Less(c, v[0], steps); },
      [&](const Scope& b, const std::vector<Output>& v) {
        const std::vector<Output> now(v.begin() + 1, v.begin() + 1 + n_state);
        Output y;
        std::vector<Output> next = cell.Step(b, ops::Gather(b, x, v[0]), now, &y);
        if (lengths) {  // past its length an entry keeps its state, outputs 0
          Output live = ops::Less(b, v[0], *lengths);
          for (size_t k = 0; k < n_state; ++k) next[k] = ops::Select(b, live, next[k], now[k]);
          y = ops::Select(b, live, y, ops::ZerosLike(b, y));
        }
        next.insert(next.begin(), ops::Add(b, v[0], ops::ConstInt(b, 1)));
        next.push_back(ops::InplaceUpdate(b, v.back(), v[0], y));
        return next;
      },
      vars, wo);
  return {out.back(), std::vector<Output>(out.begin() + 1, out.begin() + 1 + n_state)};
}

// The same through the cell's fused sequence op. Past an entry's length the op runs on
// (nothing before depends on it): its outputs there are zeroed and its final state is taken at
// its last step, as TensorFlow's LSTMBlockFusedCell does.
RnnOutputs FusedRnn(const Scope& rs, RnnCell& cell, Output x, const std::vector<Output>& state,
                    Output steps, Output batch, const std::optional<Output>& lengths) {
  const DType dtype = x.dtype();
  Output len = lengths ? ops::Minimum(rs, *lengths, steps)
                       : ops::Fill(rs, ops::Reshape(rs, batch, {1}), steps);
  Output max_len = ops::Cast(rs, lengths ? ops::Max(rs, len) : steps, DT_INT64);
  const FusedSequenceOutputs f = cell.FusedSequence(rs, x, max_len, state);
  // [T, 1] step numbers against [1, B] lengths: [T, B, 1] masks of the live steps and the last.
  Output t =
      ops::Reshape(rs, ops::Range(rs, ops::ConstInt(rs, 0), steps, ops::ConstInt(rs, 1)), {-1, 1});
  Output per_entry = ops::Reshape(rs, len, {1, -1});
  auto mask = [&](Output b) { return ops::ExpandDims(rs, ops::Cast(rs, b, dtype), 2); };
  Output last = mask(ops::Equal(rs, t, ops::Sub(rs, per_entry, ops::ConstInt(rs, 1))));
  RnnOutputs r;
  r.outputs = lengths ? ops::Mul(rs, f.outputs, mask(ops::Less(rs, t, per_entry))) : f.outputs;
  for (const Output& all : f.states)
    r.final_state.push_back(ops::Sum(rs, ops::Mul(rs, all, last), {0}));
  return r;
}

}  // namespace

RnnOutputs DynamicRnn(const Scope& s, RnnCell& cell, Output inputs,
                      const DynamicRnnOptions& options) {
  const Shape& in = inputs.shape();
  if (in.unknown_rank() || in.rank() != 3 || in.dim(2) < 0) {
    ThrowError(errors::InvalidArgument("DynamicRnn: inputs '", inputs.name(),
                                       "' must be [batch, time, depth] with a known depth, got ",
                                       in.ToString()));
  }
  if (inputs.dtype() != DT_FLOAT && inputs.dtype() != DT_DOUBLE) {
    ThrowError(errors::InvalidArgument("DynamicRnn: inputs '", inputs.name(), "' are ",
                                       DTypeName(inputs.dtype()), "; float or double expected"));
  }
  std::optional<Output> lengths = options.sequence_length;
  if (lengths) {  // int32 or int64 [batch], as tf.nn.dynamic_rnn takes it
    const Shape& ls = lengths->shape();
    if ((lengths->dtype() != DT_INT32 && lengths->dtype() != DT_INT64) ||
        (!ls.unknown_rank() && ls.rank() != 1)) {
      ThrowError(errors::InvalidArgument("DynamicRnn: sequence_length '", lengths->name(),
                                         "' must be an int32 or int64 vector, got ",
                                         DTypeName(lengths->dtype()), " ", ls.ToString()));
    }
  }
  const Scope rs = s.NewSubScope(options.name);
  if (lengths && lengths->dtype() == DT_INT64) lengths = ops::Cast(rs, *lengths, DT_INT32);
  const DType dtype = inputs.dtype();
  cell.Build(s, in.dim(2), dtype);
  Output x = options.time_major ? inputs : ops::Transpose(rs, inputs, {1, 0, 2});  // [T, B, D]
  Output shape = ops::Shape(rs, x);
  Output steps = ops::Gather(rs, shape, ops::ConstInt(rs, 0));
  Output batch = ops::Gather(rs, shape, ops::ConstInt(rs, 1));
  std::vector<Output> state;
  for (int64_t width : cell.state_sizes())
    state.push_back(Zeros(rs, {batch}, {static_cast<int32_t>(width)}, dtype));
  RnnOutputs r =
      options.fused && cell.HasFusedSequence(rs)
          ? FusedRnn(rs, cell, x, state, steps, batch, lengths)
          : LoopRnn(rs, cell, x, state, steps, batch, lengths, options.parallel_iterations);
  if (!options.time_major) r.outputs = ops::Transpose(rs, r.outputs, {1, 0, 2});
  return r;
}

}  // namespace pf::layers
