// The CUDA-free arithmetic of the cuDNN wrappers: padding splits, descriptor dims and strides,
// filter layout maps, pooling window maps. Runs without a GPU (and without CUDA).
#include "placeflow/devices/gpu_dnn_plan.h"

#include <catch2/catch.hpp>
#include <vector>

#include "placeflow/devices/cuda/gpu_dnn_launch.h"

namespace pf::gpu_dnn_plan_test {
namespace {

GpuConvDesc Conv(int64_t in, int64_t k, int stride, int pad_before, int pad_after, int64_t out) {
  GpuConvDesc d;
  d.batch = 2;
  d.in_h = d.in_w = in;
  d.in_c = 3;
  d.out_c = 4;
  d.filter_h = d.filter_w = k;
  d.stride_h = d.stride_w = stride;
  d.pad_top = d.pad_left = pad_before;
  d.pad_bottom = d.pad_right = pad_after;
  d.out_h = d.out_w = out;
  return d;
}

// A direct 1-channel, 1-filter, 1-D convolution with (before, after) zero padding.
std::vector<double> Conv1d(const std::vector<double>& x, const std::vector<double>& f, int stride,
                           int before, int after) {
  const int n = static_cast<int>(x.size()), k = static_cast<int>(f.size());
  std::vector<double> y;
  for (int o = 0; o * stride + k <= n + before + after; ++o) {
    double s = 0;
    for (int j = 0; j < k; ++j) {
      const int i = o * stride - before + j;
      if (i >= 0 && i < n) s += x[i] * f[j];
    }
    y.push_back(s);
  }
  return y;
}

}  // namespace

TEST_CASE("Asymmetric padding splits into cuDNN's symmetric part and an explicit remainder",
          "[gpu_dnn]") {
  auto same = SplitDnnPadding(0, 1);  // SAME with an odd total: the extra row goes after
  CHECK(same.common == 0);
  CHECK(same.extra_before == 0);
  CHECK(same.extra_after == 1);
  CHECK_FALSE(same.symmetric());
  auto expl = SplitDnnPadding(3, 1);  // EXPLICIT may put more before
  CHECK(expl.common == 1);
  CHECK(expl.extra_before == 2);
  CHECK(expl.extra_after == 0);
  CHECK(SplitDnnPadding(2, 2).symmetric());

  // The split computes the same convolution: explicit zeros, then symmetric padding.
  const std::vector<double> x = {1, -2, 3, 5, -7, 11, 13};
  const std::vector<double> f = {2, -1, 4};
  for (auto [b, a] : {std::pair{0, 1}, {1, 2}, {3, 1}, {2, 0}}) {
    auto s = SplitDnnPadding(b, a);
    std::vector<double> xp(s.extra_before, 0.0);
    xp.insert(xp.end(), x.begin(), x.end());
    xp.resize(xp.size() + s.extra_after, 0.0);
    CHECK(Conv1d(xp, f, 2, s.common, s.common) == Conv1d(x, f, 2, b, a));
  }
}

TEST_CASE("cuDNN 4-D descriptors: N,C,H,W dims with the layout's strides", "[gpu_dnn]") {
  auto nhwc = MakeDnnTensor4(DnnLayout::kNHWC, 2, 3, 4, 5);
  CHECK(std::vector<int>(nhwc.dims, nhwc.dims + 4) == std::vector<int>{2, 3, 4, 5});
  CHECK(std::vector<int>(nhwc.strides, nhwc.strides + 4) == std::vector<int>{60, 1, 15, 3});
  auto nchw = MakeDnnTensor4(DnnLayout::kNCHW, 2, 3, 4, 5);
  CHECK(std::vector<int>(nchw.strides, nchw.strides + 4) == std::vector<int>{60, 20, 5, 1});
  // The strides agree with the device code's offsets, element by element.
  for (bool is_nhwc : {true, false}) {
    const auto& t = is_nhwc ? nhwc : nchw;
    int64_t expect = 0;  // packed order: N, H, W, C for NHWC; N, C, H, W for NCHW
    for (int a = 0; a < 2; ++a) {
      for (int b = 0; b < (is_nhwc ? 4 : 3); ++b) {
        for (int c = 0; c < (is_nhwc ? 5 : 4); ++c) {
          for (int d = 0; d < (is_nhwc ? 3 : 5); ++d, ++expect) {
            const int n = a, ch = is_nhwc ? d : b, h = is_nhwc ? b : c, w = is_nhwc ? c : d;
            CHECK(n * t.strides[0] + ch * t.strides[1] + h * t.strides[2] + w * t.strides[3] ==
                  expect);
            CHECK(dnn::Offset4(is_nhwc, n, ch, h, w, 3, 4, 5) == expect);
          }
        }
      }
    }
  }
}

TEST_CASE("HWIO filters map onto cuDNN's KRSC and KCRS layouts", "[gpu_dnn]") {
  const int R = 2, S = 3, C = 2, K = 4;
  auto code = [](int64_t r, int64_t s, int64_t c, int64_t k) {
    return r * 1000 + s * 100 + c * 10 + k;
  };
  std::vector<int64_t> hwio;  // filled in HWIO's memory order
  for (int r = 0; r < R; ++r)
    for (int s = 0; s < S; ++s)
      for (int c = 0; c < C; ++c)
        for (int k = 0; k < K; ++k) hwio.push_back(code(r, s, c, k));
  for (bool krsc : {true, false}) {
    // What the transform kernel does, thread i of the cuDNN layout.
    std::vector<int64_t> out(hwio.size(), -1);
    for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
      int64_t r, s, c, k;
      dnn::DecodeCudnnFilter(krsc, i, R, S, C, &r, &s, &c, &k);
      CHECK(dnn::CudnnFilterOffset(krsc, r, s, c, k, R, S, C) == i);
      out[i] = hwio[dnn::HwioOffset(r, s, c, k, S, C, K)];
    }
    // Walk the expected memory order independently: K outermost, then R,S,C or C,R,S.
    int64_t i = 0;
    for (int k = 0; k < K; ++k) {
      if (krsc) {
        for (int r = 0; r < R; ++r)
          for (int s = 0; s < S; ++s)
            for (int c = 0; c < C; ++c) CHECK(out[i++] == code(r, s, c, k));
      } else {
        for (int c = 0; c < C; ++c)
          for (int r = 0; r < R; ++r)
            for (int s = 0; s < S; ++s) CHECK(out[i++] == code(r, s, c, k));
      }
    }
  }
}

TEST_CASE("Convolution plans: padding, padded input, filter dims, errors", "[gpu_dnn]") {
  // SAME, stride 2, 5x5 input, 3x3 filter: out 3, total padding 2 split 1/1: cuDNN alone.
  auto p = PlanGpuConv(Conv(5, 3, 2, 1, 1, 3)).value();
  CHECK_FALSE(p.explicit_pad);
  CHECK(p.rows.common == 1);
  CHECK(p.padded_h == 5);
  CHECK(p.filter_krsc);
  CHECK((p.k == 4 && p.c == 3 && p.r == 3 && p.s == 3));
  // SAME, stride 2, 4x4 input, 3x3 filter: out 2, total padding 1 (0 before, 1 after).
  GpuConvDesc d = Conv(4, 3, 2, 0, 1, 2);
  d.layout = DnnLayout::kNCHW;
  p = PlanGpuConv(d).value();
  CHECK(p.explicit_pad);
  CHECK((p.padded_h == 5 && p.padded_w == 5 && p.rows.common == 0));
  CHECK(std::vector<int>(p.x.dims, p.x.dims + 4) == std::vector<int>{2, 3, 5, 5});
  CHECK(std::vector<int>(p.y.dims, p.y.dims + 4) == std::vector<int>{2, 4, 2, 2});
  CHECK(p.padded_x_elements == 2 * 3 * 5 * 5);
  CHECK_FALSE(p.filter_krsc);
  // Depthwise: groups = in_c, out_c = in_c * multiplier, one input channel per filter.
  d = Conv(6, 3, 1, 1, 1, 6);
  d.groups = 3;
  d.out_c = 6;
  p = PlanGpuConv(d).value();
  CHECK((p.k == 6 && p.c == 1 && p.filter_elements == 3 * 3 * 1 * 6));
  // Dilation 2: effective 5x5 window.
  d = Conv(9, 3, 1, 0, 0, 5);
  d.dilation_h = d.dilation_w = 2;
  CHECK(PlanGpuConv(d).ok());

  auto bad = PlanGpuConv(Conv(4, 3, 2, 0, 1, 3));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(),
             Catch::Contains("the output is [3,3] but this padding gives [2,2]"));
  d = Conv(5, 3, 1, 1, 1, 5);
  d.groups = 2;
  bad = PlanGpuConv(d);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("groups 2 must divide"));
  d.groups = 1;
  d.dtype = DT_INT32;
  CHECK(PlanGpuConv(d).status().code() == Code::kUnimplemented);
}

TEST_CASE("Pooling plans: -inf padding for max, direct kernels for asymmetric average",
          "[gpu_dnn]") {
  GpuPoolDesc d;
  d.batch = 1;
  d.channels = 2;
  d.in_h = d.in_w = 4;
  d.window_h = d.window_w = 3;
  d.stride_h = d.stride_w = 2;
  d.pad_bottom = d.pad_right = 1;  // SAME: out 2, total padding 1
  d.out_h = d.out_w = 2;
  auto p = PlanGpuPool(d).value();
  CHECK((p.explicit_pad && !p.direct_avg && p.padded_h == 5 && p.padded_w == 5));
  d.max = false;
  p = PlanGpuPool(d).value();
  CHECK((!p.explicit_pad && p.direct_avg && p.padded_h == 4));
  d.pad_top = d.pad_left = 1;  // symmetric: cuDNN pads itself
  d.out_h = d.out_w = 2;
  p = PlanGpuPool(d).value();
  CHECK((!p.explicit_pad && !p.direct_avg && p.rows.common == 1));
  d.pad_top = 3;
  auto bad = PlanGpuPool(d);
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("padding must be smaller than the window"));
}

TEST_CASE("Average pooling's gradient gathers exactly the windows the forward scatters",
          "[gpu_dnn]") {
  for (auto [n, window, stride, pad, out] :
       {std::tuple{7, 3, 2, 1, 4}, {6, 2, 2, 0, 3}, {5, 3, 1, 1, 5}, {8, 4, 3, 1, 3}}) {
    // Scatter: input rows each output row's window covers.
    std::vector<std::vector<int>> covered(n);
    for (int o = 0; o < out; ++o) {
      int64_t lo, hi;
      dnn::Window(o, stride, pad, window, n, &lo, &hi);
      CHECK(lo < hi);
      for (int64_t h = lo; h < hi; ++h) covered[h].push_back(o);
    }
    for (int h = 0; h < n; ++h) {
      int64_t lo, hi;
      dnn::Covering(h, stride, pad, window, out, &lo, &hi);
      std::vector<int> gathered;
      for (int64_t o = lo; o < hi; ++o) gathered.push_back(static_cast<int>(o));
      CHECK(gathered == covered[h]);
    }
  }
}

TEST_CASE("Batch norm plans and epsilon clamping", "[gpu_dnn]") {
  GpuBatchNormDesc d;
  d.batch = 2;
  d.height = 3;
  d.width = 4;
  d.channels = 5;
  auto t = PlanGpuBatchNorm(d).value();
  CHECK(std::vector<int>(t.dims, t.dims + 4) == std::vector<int>{2, 5, 3, 4});
  CHECK(t.strides[1] == 1);
  d.dtype = DT_INT64;
  CHECK(PlanGpuBatchNorm(d).status().code() == Code::kUnimplemented);
  CHECK(ClampBatchNormEpsilon(1e-7, 1e-5) == 1e-5);
  CHECK(ClampBatchNormEpsilon(1e-3, 0.0) == 1e-3);
}

}  // namespace pf::gpu_dnn_plan_test
