// pf-bench's convolution figures (tools/cnn_bench.cc).
#pragma once

namespace pf::bench {

// conv_lenet_step / mobilenet_small_step: ms per training step at batch 128, peak RSS.
void ConvLenetStep();
void MobilenetSmallStep();
// mobilenet_v2_step: MobileNetV2 (width 1.0) on 224x224x3 at batch 8, 2 classes.
void MobilenetV2Step();
// conv2d_gflops: one 3x3 layer forward and backward, next to the oneDNN primitives alone.
void Conv2dGflops();

}  // namespace pf::bench
