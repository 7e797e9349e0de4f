// pf-bench figures of the control-flow runtime's recurrent layers (train/rnn.h).
#pragma once

namespace pf::bench {

// lstm_step: ms per forward and backward pass of DynamicRnn over an LSTMCell of 128 units,
// batch 64, 28 steps of 28 features (row-by-row MNIST's shape), loss the mean of the outputs'
// squares, gradients of every variable (no update): ms with the LSTM fused (DynamicRnn's default,
// one BlockLSTM op) and ms_loop as a while loop (fused = false). tools/bench/compare_peers.py's
// lstm_step runs TensorFlow's tf.compat.v1.nn.dynamic_rnn (a while loop) and PyTorch's nn.LSTM
// on the same shapes.
void LstmStep();

}  // namespace pf::bench
