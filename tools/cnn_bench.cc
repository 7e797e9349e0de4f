// pf-bench's convolution figures (issue 14): training steps of the CNN models and one 3x3
// convolution layer against the oneDNN primitives alone.
#include "tools/cnn_bench.h"

#include <omp.h>

#include <dnnl.hpp>
#include <fstream>
#include <string>
#include <thread>

#include "placeflow/models/models.h"
#include "tools/bench_util.h"

namespace pf::bench {
namespace {

// The process's peak resident set (VmHWM), in MB.
double PeakRssMb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return 0;
}

// Median ms of one training step at `batch` on a fixed batch, x[i] = (i * 7919 % 256) / 255 and
// y[i] = i % num_classes, and the process's peak RSS afterwards. The default options: MNIST's
// 28x28x1 images and 10 classes.
void ModelStep(const char* figure, const char* model, int64_t batch = 128,
               const models::ModelOptions& options = {}) {
  pf::Graph g;
  g.set_seed(1);
  pf::Scope root = pf::Scope::Root(&g);
  models::Model m = models::BuildModel(model, root, options);
  pf::Session sess(g, OnDevice(false));
  sess.Run({}, {}, {pf::GlobalVariablesInitializer(root)});
  int64_t features = 1;
  for (int64_t d : options.image_shape) features *= d;
  pf::Tensor x(pf::DT_FLOAT, {batch, features}), y(pf::DT_INT32, {batch});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = (i * 7919 % 256) / 255.f;
  for (int64_t i = 0; i < batch; ++i) {
    y.data<int32_t>()[i] = static_cast<int32_t>(i % options.num_classes);
  }
  auto step = [&] { sess.Run({{m.input, x}, {m.target, y}}, {}, {m.train_op}); };
  for (int i = 0; i < 3; ++i) step();
  const double s = TimeMedian([&] {
                     for (int i = 0; i < 5; ++i) step();
                   }) /
                   5;
  std::printf("%s ms=%.2f batch=%lld examples/s=%.0f peak_rss_mb=%.0f repeats=%d\n", figure,
              1e3 * s, static_cast<long long>(batch), batch / s, PeakRssMb(), kRepeats);
}

// The same layer on oneDNN directly: forward, backward data and backward weights on NHWC
// activations with all cores (OpenMP), each primitive's weights in the layout it prefers
// (format_tag::any, no reorder timed): the primitives' own best.
double DirectOneDnnSeconds(int64_t n, int64_t hw, int64_t ci, int64_t co) {
  using namespace dnnl;
  using tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  // All cores for the reference, set before the primitives are created (they size their
  // per-thread scratch then).
  omp_set_num_threads(static_cast<int>(std::thread::hardware_concurrency()));
  engine eng(engine::kind::cpu, 0);
  stream st(eng);
  memory::desc src({n, ci, hw, hw}, f32, tag::nhwc), dst({n, co, hw, hw}, f32, tag::nhwc),
      wei({co, ci, 3, 3}, f32, tag::any);
  const memory::dims strides = {1, 1}, pad = {1, 1};
  convolution_forward::primitive_desc fwd(
      {prop_kind::forward_training, algorithm::convolution_direct, src, wei, dst, strides, pad,
       pad},
      eng);
  convolution_backward_data::primitive_desc bwd_d(
      {algorithm::convolution_direct, src, wei, dst, strides, pad, pad}, eng, fwd);
  convolution_backward_weights::primitive_desc bwd_w(
      {algorithm::convolution_direct, src, wei, dst, strides, pad, pad}, eng, fwd);
  memory s_m(src, eng), d_m(dst, eng), w_m(fwd.weights_desc(), eng),
      wd_m(bwd_d.weights_desc(), eng), ds_m(src, eng), dd_m(dst, eng),
      dw_m(bwd_w.diff_weights_desc(), eng);
  for (memory* mem : {&s_m, &d_m, &w_m, &wd_m, &dd_m}) {
    float* p = static_cast<float*>(mem->get_data_handle());
    const size_t count = mem->get_desc().get_size() / sizeof(float);
    for (size_t i = 0; i < count; ++i) p[i] = static_cast<float>(i % 13) * 0.1f - 0.6f;
  }
  convolution_forward f(fwd);
  convolution_backward_data bd(bwd_d);
  convolution_backward_weights bw(bwd_w);
  auto run = [&] {
    f.execute(st, {{DNNL_ARG_SRC, s_m}, {DNNL_ARG_WEIGHTS, w_m}, {DNNL_ARG_DST, d_m}});
    bd.execute(st,
               {{DNNL_ARG_DIFF_DST, dd_m}, {DNNL_ARG_WEIGHTS, wd_m}, {DNNL_ARG_DIFF_SRC, ds_m}});
    bw.execute(st, {{DNNL_ARG_SRC, s_m}, {DNNL_ARG_DIFF_DST, dd_m}, {DNNL_ARG_DIFF_WEIGHTS, dw_m}});
    st.wait();
  };
  run();
  return TimeMedian([&] {
           for (int i = 0; i < 5; ++i) run();
         }) /
         5;
}

}  // namespace

void ConvLenetStep() { ModelStep("conv_lenet_step", "lenet"); }
void MobilenetSmallStep() { ModelStep("mobilenet_small_step", "mobilenet_v2_small"); }

// Seed 004's workload: Keras's MobileNetV2 at width 1.0 on 224x224x3, 2 classes, batch 8, Adam.
void MobilenetV2Step() {
  models::ModelOptions o;
  o.image_shape = {224, 224, 3};
  o.num_classes = 2;
  ModelStep("mobilenet_v2_step", "mobilenet_v2", 8, o);
}

// One 3x3 SAME convolution, 64x28x28x32 -> 64 channels: Conv2D, Conv2DBackpropInput and
// Conv2DBackpropFilter through a session, against the three primitives called directly.
void Conv2dGflops() {
  constexpr int64_t n = 64, hw = 28, ci = 32, co = 64;
  const double flops = 3 * 2.0 * n * hw * hw * ci * co * 9;
  pf::Graph g;
  pf::Scope root = pf::Scope::Root(&g);
  pf::Output x = pf::ops::Const(root, pf::Tensor(pf::DT_FLOAT, {n, hw, hw, ci}));
  pf::Output w = pf::ops::Const(root, pf::Tensor(pf::DT_FLOAT, {3, 3, ci, co}));
  pf::Output dy = pf::ops::Const(root, pf::Tensor(pf::DT_FLOAT, {n, hw, hw, co}));
  const std::vector<int32_t> strides = {1, 1, 1, 1};
  pf::Output y = pf::ops::Conv2D(root, x, w, strides, "SAME");
  pf::Output dx = pf::ops::Conv2DBackpropInput(root, pf::ops::ConstInt(root, {n, hw, hw, ci}), w,
                                               dy, strides, "SAME");
  pf::Output dw = pf::ops::Conv2DBackpropFilter(root, x, pf::ops::ConstInt(root, {3, 3, ci, co}),
                                                dy, strides, "SAME");
  pf::Session sess(g, OnDevice(false));
  // As targets, so the figure times the convolutions, not copies of their results.
  const std::vector<pf::Operation> convs = {pf::Operation(y.node), pf::Operation(dx.node),
                                            pf::Operation(dw.node)};
  sess.Run({}, {}, convs);
  const double pf_s = TimeMedian([&] {
                        for (int i = 0; i < 5; ++i) sess.Run({}, {}, convs);
                      }) /
                      5;
  const double direct_s = DirectOneDnnSeconds(n, hw, ci, co);
  std::printf(
      "conv2d_gflops gflops=%.1f onednn_direct_gflops=%.1f ratio=%.2f shape=%lldx%lldx%lldx%lld "
      "filter=3x3x%lldx%lld fwd+bwd_data+bwd_filter repeats=%d\n",
      flops / pf_s / 1e9, flops / direct_s / 1e9, direct_s / pf_s, static_cast<long long>(n),
      static_cast<long long>(hw), static_cast<long long>(hw), static_cast<long long>(ci),
      static_cast<long long>(ci), static_cast<long long>(co), kRepeats);
}

}  // namespace pf::bench
