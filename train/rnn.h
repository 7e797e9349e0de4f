// Recurrent layers over the graph's while loop (docs/control_flow.md): cells as TensorFlow 1.x's
// tf.nn.rnn_cell.LSTMCell and GRUCell, and DynamicRnn as tf.nn.dynamic_rnn, so a sequence of any
// length runs in one loop instead of an unrolled graph, and trains through the loop's gradient.
//
//   pf::layers::LSTMCell cell("lstm", /*units=*/128);
//   pf::layers::RnnOutputs r = pf::layers::DynamicRnn(root, cell, x);  // x: [batch, time, depth]
//   pf::Output last = r.final_state[1];                                // h after the last step
//
// A cell's variables ("<name>/kernel", "<name>/bias") are made when DynamicRnn first builds it,
// outside the loop, in the scope's variable scope; the loop reads them every step.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "placeflow/graph/scope.h"
#include "placeflow/graph/variable.h"

namespace pf::layers {

// A cell's whole sequence run as one op (RnnCell::FusedSequence): every step's output and, per
// state tensor, every step's value, each [time, batch, width]; steps from seq_len_max on are 0.
struct FusedSequenceOutputs {
  Output outputs;
  std::vector<Output> states;
};

class RnnCell {
 public:
  virtual ~RnnCell() = default;
  // Per state tensor, its width (each state is [batch, width]).
  virtual std::vector<int64_t> state_sizes() const = 0;
  virtual int64_t output_size() const = 0;
  // Makes the variables for inputs of `depth` features and dtype `dtype` (once).
  virtual void Build(const Scope& s, int64_t depth, DType dtype) = 0;
  // One step: the output and the new state, from x [batch, depth] and the state.
  virtual std::vector<Output> Step(const Scope& s, Output x, const std::vector<Output>& state,
                                   Output* output) = 0;
  // Whether the cell has an op for a whole sequence (LSTMCell: BlockLSTM) and can run it on the
  // scope's device; DynamicRnn otherwise runs Step in a while loop.
  virtual bool HasFusedSequence(const Scope& s) const { return false; }
  // All steps of time-major x [time, batch, depth] from `state` in that op (only where
  // HasFusedSequence). seq_len_max: int64 scalar.
  virtual FusedSequenceOutputs FusedSequence(const Scope& s, Output x, Output seq_len_max,
                                             const std::vector<Output>& state);
};

// tf.nn.rnn_cell.LSTMCell without peepholes or projection: gates i, j, f, o from
// [x, h] W + b; c' = c sigmoid(f + forget_bias) + sigmoid(i) tanh(j); h' = tanh(c') sigmoid(o).
// State: {c, h}; output: h'. Its fused sequence is TensorFlow's BlockLSTM op (ops::BlockLSTM,
// CPU kernels; none on a GPU scope), with the same variables and results up to rounding.
class LSTMCell : public RnnCell {
 public:
  LSTMCell(std::string name, int64_t units, float forget_bias = 1.f, int64_t seed = 0);
  std::vector<int64_t> state_sizes() const override { return {units_, units_}; }
  int64_t output_size() const override { return units_; }
  void Build(const Scope& s, int64_t depth, DType dtype) override;
  std::vector<Output> Step(const Scope& s, Output x, const std::vector<Output>& state,
                           Output* output) override;
  bool HasFusedSequence(const Scope& s) const override;
  FusedSequenceOutputs FusedSequence(const Scope& s, Output x, Output seq_len_max,
                                     const std::vector<Output>& state) override;

 private:
  std::string name_;
  int64_t units_;
  float forget_bias_;
  int64_t seed_;
  std::optional<Variable> kernel_, bias_;
};

// tf.nn.rnn_cell.GRUCell: r, u = sigmoid([x, h] W_g + b_g); c = tanh([x, r h] W_c + b_c);
// h' = u h + (1 - u) c. State: {h}; output: h'.
class GRUCell : public RnnCell {
 public:
  GRUCell(std::string name, int64_t units, int64_t seed = 0);
  std::vector<int64_t> state_sizes() const override { return {units_}; }
  int64_t output_size() const override { return units_; }
  void Build(const Scope& s, int64_t depth, DType dtype) override;
  std::vector<Output> Step(const Scope& s, Output x, const std::vector<Output>& state,
                           Output* output) override;

 private:
  std::string name_;
  int64_t units_;
  int64_t seed_;
  std::optional<Variable> gate_kernel_, gate_bias_, candidate_kernel_, candidate_bias_;
};

// tf.nn.rnn_cell.DeviceWrapper: `cell`'s variables and step ops ask for `device` (a cell of a
// layer on its own device, model parallel). The wrapped cell must outlive this one.
class DeviceWrapper : public RnnCell {
 public:
  DeviceWrapper(RnnCell* cell, std::string device) : cell_(cell), device_(std::move(device)) {}
  std::vector<int64_t> state_sizes() const override { return cell_->state_sizes(); }
  int64_t output_size() const override { return cell_->output_size(); }
  void Build(const Scope& s, int64_t depth, DType dtype) override;
  std::vector<Output> Step(const Scope& s, Output x, const std::vector<Output>& state,
                           Output* output) override;
  bool HasFusedSequence(const Scope& s) const override;
  FusedSequenceOutputs FusedSequence(const Scope& s, Output x, Output seq_len_max,
                                     const std::vector<Output>& state) override;

 private:
  RnnCell* cell_;
  std::string device_;
};

// tf.nn.rnn_cell.MultiRNNCell: cells stacked, each one's output the next one's input within a
// step; the state is every cell's state in order. With cells on different devices (DeviceWrapper)
// and DynamicRnn's loop spanning them, layer k runs step t while layer k-1 runs step t+1 (the
// pipelining of seed article 003's LSTM on several GPUs), so it has no fused sequence: it always
// runs as a loop. The cells must outlive this one.
class MultiRnnCell : public RnnCell {
 public:
  explicit MultiRnnCell(std::vector<RnnCell*> cells);
  std::vector<int64_t> state_sizes() const override;
  int64_t output_size() const override { return cells_.back()->output_size(); }
  void Build(const Scope& s, int64_t depth, DType dtype) override;
  std::vector<Output> Step(const Scope& s, Output x, const std::vector<Output>& state,
                           Output* output) override;

 private:
  std::vector<RnnCell*> cells_;
};

struct DynamicRnnOptions {
  bool time_major = false;  // inputs [time, batch, depth] instead of [batch, time, depth]
  // Per batch entry, its length (int32 or int64 [batch]): past it the state stays as it was
  // and the output is zero, as tf.nn.dynamic_rnn's sequence_length.
  std::optional<Output> sequence_length;
  int parallel_iterations = 32;  // TensorFlow's default for dynamic_rnn
  std::string name = "rnn";      // the name scope
  // Run the cell's fused sequence op where it has one (RnnCell::FusedSequence: an LSTMCell's
  // BlockLSTM), as Keras's LSTM layer picks its fused kernel: the same results up to rounding,
  // without a loop. false: always the while loop of Step.
  bool fused = true;
};
struct RnnOutputs {
  Output outputs;                   // every step's output, [batch, time, units] (or time-major)
  std::vector<Output> final_state;  // the cell's state after the last step
};
// tf.nn.dynamic_rnn: runs `cell` over the time axis of `inputs` (depth known statically) in a
// while loop, or as its fused sequence op (options.fused), from a zero state. pf::Error for inputs
// that are not rank 3 or a non-float dtype.
RnnOutputs DynamicRnn(const Scope& s, RnnCell& cell, Output inputs,
                      const DynamicRnnOptions& options = {});

}  // namespace pf::layers
