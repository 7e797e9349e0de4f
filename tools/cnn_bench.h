// pf-bench's convolution figures (tools/cnn_bench.cc).
#pragma once

namespace pf::bench {

// conv_lenet_step / mobilenet_small_step: ms per training step at batch 128, peak RSS.
void ConvLenetStep();
void MobilenetSmallStep();
// conv2d_gflops: one 3x3 layer forward and backward, next to the oneDNN primitives alone.
void Conv2dGflops();

}  // namespace pf::bench
