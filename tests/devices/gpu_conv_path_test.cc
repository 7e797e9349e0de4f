// The GPU convolutions' fallback chain (cuDNN as asked, cuDNN through NCHW copies, direct
// kernels) without a GPU: which path is tried next, what the trace says, and the direct kernels'
// per-element sums and layout copies (gpu_dnn_launch.h) against a plain reference convolution.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "placeflow/devices/cuda/gpu_dnn_launch.h"
#include "placeflow/devices/gpu_dnn_plan.h"
#include "placeflow/executor/trace.h"

namespace pf::gpu_conv_path_test {
namespace {

// The case the first H100 run failed (Conv2D SAME stride 2 double: cuDNN 9 had no NHWC double
// backward data algorithm): input [3,9,8,5], filter [3,3,5,6], output [3,5,4,6].
GpuConvDesc FirstRunFailure() {
  GpuConvDesc d;
  d.dtype = DT_DOUBLE;
  d.layout = DnnLayout::kNHWC;
  d.batch = 3;
  d.in_h = 9;
  d.in_w = 8;
  d.in_c = 5;
  d.out_h = 5;
  d.out_w = 4;
  d.out_c = 6;
  d.filter_h = d.filter_w = 3;
  d.stride_h = d.stride_w = 2;
  d.pad_top = d.pad_bottom = 1;
  d.pad_left = 0;
  d.pad_right = 1;
  return d;
}

std::vector<double> Random(size_t n, uint64_t seed) {
  std::vector<double> v(n);
  for (double& x : v) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<double>(seed >> 11) / 9007199254740992.0 * 2 - 1;  // [-1, 1)
  }
  return v;
}

double Dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

int64_t OutDim(int64_t in, int64_t before, int64_t after, int64_t k, int64_t stride,
               int64_t dilation) {
  return (in + before + after - ((k - 1) * dilation + 1)) / stride + 1;
}

struct Case {
  int64_t n, h, w, c, k, fh, fw, groups, sh, sw, dh, dw, pt, pb, pl, pr;
  dnn::ConvGeom Geom() const {
    const int64_t oh = OutDim(h, pt, pb, fh, sh, dh), ow = OutDim(w, pl, pr, fw, sw, dw);
    return {n, c, h, w, k, oh, ow, fh, fw, groups, sh, sw, dh, dw, pt, pl};
  }
};

// y[n][k][oh][ow] (NCHW order) by the definition: an explicitly zero-padded input, then a
// valid correlation per group. Shares no index helper with the kernels.
std::vector<double> ReferenceForward(const Case& cs, const dnn::ConvGeom& g, bool nhwc,
                                     const std::vector<double>& x, const std::vector<double>& w) {
  const int64_t ph = cs.h + cs.pt + cs.pb, pw = cs.w + cs.pl + cs.pr;
  std::vector<double> xp(cs.n * cs.c * ph * pw, 0.0);
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t c = 0; c < cs.c; ++c)
      for (int64_t h = 0; h < cs.h; ++h)
        for (int64_t v = 0; v < cs.w; ++v) {
          const int64_t src = nhwc ? ((n * cs.h + h) * cs.w + v) * cs.c + c
                                   : ((n * cs.c + c) * cs.h + h) * cs.w + v;
          xp[((n * cs.c + c) * ph + h + cs.pt) * pw + v + cs.pl] = x[src];
        }
  const int64_t cg = cs.c / cs.groups, kg = cs.k / cs.groups;
  std::vector<double> y(cs.n * cs.k * g.out_h * g.out_w, 0.0);
  for (int64_t n = 0; n < cs.n; ++n)
    for (int64_t k = 0; k < cs.k; ++k)
      for (int64_t oh = 0; oh < g.out_h; ++oh)
        for (int64_t ow = 0; ow < g.out_w; ++ow) {
          double s = 0;
          for (int64_t r = 0; r < cs.fh; ++r)
            for (int64_t q = 0; q < cs.fw; ++q)
              for (int64_t c = 0; c < cg; ++c) {
                const int64_t ic = (k / kg) * cg + c;
                s += xp[((n * cs.c + ic) * ph + oh * cs.sh + r * cs.dh) * pw + ow * cs.sw +
                        q * cs.dw] *
                     w[((r * cs.fw + q) * cg + c) * cs.k + k];
              }
          y[((n * cs.k + k) * g.out_h + oh) * g.out_w + ow] = s;
        }
  return y;
}

// The direct kernels' sums over every element, as the CUDA kernels spread them.
std::vector<double> Forward(const dnn::ConvGeom& g, bool nhwc, const std::vector<double>& x,
                            const std::vector<double>& w) {
  const dnn::Dims4 od{g.n, g.out_c, g.out_h, g.out_w};
  std::vector<double> y(od.n * od.c * od.h * od.w);
  for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
    int64_t n, k, oh, ow;
    dnn::DecodeOffset4(nhwc, i, od, &n, &k, &oh, &ow);
    y[i] = dnn::DirectConvForwardAt(nhwc, g, x.data(), w.data(), n, k, oh, ow);
  }
  return y;
}
std::vector<double> BackwardData(const dnn::ConvGeom& g, bool nhwc, const std::vector<double>& w,
                                 const std::vector<double>& dy) {
  const dnn::Dims4 id{g.n, g.in_c, g.in_h, g.in_w};
  std::vector<double> dx(id.n * id.c * id.h * id.w);
  for (int64_t i = 0; i < static_cast<int64_t>(dx.size()); ++i) {
    int64_t n, c, h, v;
    dnn::DecodeOffset4(nhwc, i, id, &n, &c, &h, &v);
    dx[i] = dnn::DirectConvBackwardDataAt(nhwc, g, w.data(), dy.data(), n, c, h, v);
  }
  return dx;
}
std::vector<double> BackwardFilter(const dnn::ConvGeom& g, bool nhwc, const std::vector<double>& x,
                                   const std::vector<double>& dy, int64_t threads) {
  const int64_t cg = g.in_c / g.groups;
  std::vector<double> dw(g.filter_h * g.filter_w * cg * g.out_c);
  for (int64_t f = 0; f < static_cast<int64_t>(dw.size()); ++f) {
    const int64_t k = f % g.out_c, c = (f / g.out_c) % cg, s = (f / (g.out_c * cg)) % g.filter_w,
                  r = f / (g.out_c * cg * g.filter_w);
    double sum = 0;
    for (int64_t t = 0; t < threads; ++t) {
      sum +=
          dnn::DirectConvBackwardFilterPart(nhwc, g, x.data(), dy.data(), r, s, c, k, t, threads);
    }
    dw[f] = sum;
  }
  return dw;
}

}  // namespace

TEST_CASE("GPU convolution paths: NHWC tries NCHW copies before the direct kernels",
          "[gpu_dnn][gpu_conv_path]") {
  GpuConvDesc d = FirstRunFailure();
  REQUIRE(ValidateGpuConv(d).ok());
  CHECK(GpuConvCandidates(d) == std::vector<GpuConvPath>{GpuConvPath::kCudnn,
                                                         GpuConvPath::kCudnnNchw,
                                                         GpuConvPath::kDirect});
  CHECK(GpuConvPathLayout(d, GpuConvPath::kCudnn) == DnnLayout::kNHWC);
  CHECK(GpuConvPathLayout(d, GpuConvPath::kCudnnNchw) == DnnLayout::kNCHW);
  CHECK(GpuConvPathLayout(d, GpuConvPath::kDirect) == DnnLayout::kNHWC);
  CHECK(GpuConvPathName(d, GpuConvPath::kCudnn) == "cudnn NHWC");
  // NCHW is cuDNN's own layout: nothing between it and the direct kernels.
  d.layout = DnnLayout::kNCHW;
  CHECK(GpuConvCandidates(d) ==
        std::vector<GpuConvPath>{GpuConvPath::kCudnn, GpuConvPath::kDirect});
  CHECK(GpuConvPathName(d, GpuConvPath::kCudnn) == "cudnn NCHW");
}

TEST_CASE("GPU convolution paths: PF_GPU_CONV_PATH starts further down the chain",
          "[gpu_dnn][gpu_conv_path]") {
  GpuConvDesc d = FirstRunFailure();
  using P = GpuConvPath;
  CHECK(GpuConvCandidates(d, "").value() == GpuConvCandidates(d));
  CHECK(GpuConvCandidates(d, "auto").value() == GpuConvCandidates(d));
  CHECK(GpuConvCandidates(d, "nchw").value() == std::vector<P>{P::kCudnnNchw, P::kDirect});
  CHECK(GpuConvCandidates(d, "direct").value() == std::vector<P>{P::kDirect});
  d.layout = DnnLayout::kNCHW;
  CHECK(GpuConvCandidates(d, "nchw").value() == std::vector<P>{P::kCudnn, P::kDirect});
  CHECK(GpuConvCandidates(d, "direct").value() == std::vector<P>{P::kDirect});
  const auto bad = GpuConvCandidates(d, "fast");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == Code::kInvalidArgument);
  CHECK_THAT(bad.status().message(), Catch::Contains("'fast'"));
}

TEST_CASE("GPU convolution paths: the first that works wins; only Unimplemented falls through",
          "[gpu_dnn][gpu_conv_path]") {
  const GpuConvDesc d = FirstRunFailure();
  const auto candidates = GpuConvCandidates(d);
  std::vector<GpuConvPath> tried;

  SECTION("cuDNN as asked works: nothing else is tried") {
    auto c = ChooseGpuConvPath(candidates, d, [&](GpuConvPath p) {
      tried.push_back(p);
      return Status::OK();
    });
    REQUIRE(c.ok());
    CHECK(c->path == GpuConvPath::kCudnn);
    CHECK(c->skipped.empty());
    CHECK(tried.size() == 1);
  }
  SECTION("no NHWC algorithm (the first H100 run): NCHW through copies") {
    auto c = ChooseGpuConvPath(candidates, d, [&](GpuConvPath p) {
      tried.push_back(p);
      if (p == GpuConvPath::kCudnn) {
        return errors::Unimplemented(
            "cuDNN has no convolution backward data algorithm (of 6 "
            "tried) fitting a 4294967296-byte workspace");
      }
      return Status::OK();
    });
    REQUIRE(c.ok());
    CHECK(c->path == GpuConvPath::kCudnnNchw);
    CHECK_THAT(c->skipped, Catch::StartsWith("cudnn NHWC: cuDNN has no convolution backward data"));
    CHECK(tried == std::vector<GpuConvPath>{GpuConvPath::kCudnn, GpuConvPath::kCudnnNchw});
  }
  SECTION("cuDNN refuses both layouts: the direct kernels") {
    auto c = ChooseGpuConvPath(candidates, d, [&](GpuConvPath p) {
      tried.push_back(p);
      return p == GpuConvPath::kDirect ? Status::OK()
                                       : errors::Unimplemented("CUDNN_STATUS_NOT_SUPPORTED");
    });
    REQUIRE(c.ok());
    CHECK(c->path == GpuConvPath::kDirect);
    CHECK(c->skipped ==
          "cudnn NHWC: CUDNN_STATUS_NOT_SUPPORTED\n"
          "cudnn NCHW via transpose: CUDNN_STATUS_NOT_SUPPORTED");
    CHECK(tried.size() == 3);
  }
  SECTION("out of memory is the call's error, not a reason to fall back") {
    auto c = ChooseGpuConvPath(candidates, d, [&](GpuConvPath p) {
      tried.push_back(p);
      return p == GpuConvPath::kCudnn ? errors::Unimplemented("no algorithm")
                                      : errors::ResourceExhausted("OOM when allocating");
    });
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == Code::kResourceExhausted);
    CHECK(tried.size() == 2);
  }
  SECTION("every path falls through: Unimplemented naming each reason") {
    auto c = ChooseGpuConvPath(candidates, d, [&](GpuConvPath p) {
      return errors::Unimplemented("reason ", static_cast<int>(p));
    });
    REQUIRE_FALSE(c.ok());
    CHECK(c.status().code() == Code::kUnimplemented);
    CHECK_THAT(c.status().message(), Catch::Contains("direct kernel: reason 2"));
    CHECK_THAT(c.status().message(), Catch::Contains("input [3,9,8,5]"));
  }
  CHECK(GpuConvFallsThrough(errors::Unimplemented("x")));
  CHECK_FALSE(GpuConvFallsThrough(errors::Internal("x")));
  CHECK_FALSE(GpuConvFallsThrough(errors::InvalidArgument("x")));
}

TEST_CASE("GPU convolution paths: what the trace says", "[gpu_dnn][gpu_conv_path]") {
  const GpuConvDesc d = FirstRunFailure();
  CHECK(GpuConvTraceLabel(GpuConvDirection::kForward, d, GpuConvPath::kCudnn,
                          "IMPLICIT_PRECOMP_GEMM") ==
        "conv forward: cudnn NHWC algo=IMPLICIT_PRECOMP_GEMM");
  CHECK(GpuConvTraceLabel(GpuConvDirection::kBackwardData, d, GpuConvPath::kCudnnNchw, "ALGO_1") ==
        "conv backward data: cudnn NCHW via transpose algo=ALGO_1");
  CHECK(GpuConvTraceLabel(GpuConvDirection::kBackwardFilter, d, GpuConvPath::kDirect, "ALGO_0") ==
        "conv backward filter: direct kernel");
}

TEST_CASE("GPU convolution paths: the label reaches the Chrome trace's args",
          "[gpu_dnn][gpu_conv_path]") {
  RunMetadata md;
  NodeExecStats conv;
  conv.node = "grad/Conv2DBackpropInput";
  conv.op = "Conv2DBackpropInput";
  conv.device = "/job:localhost/replica:0/task:0/device:GPU:0";
  conv.label = GpuConvTraceLabel(GpuConvDirection::kBackwardData, FirstRunFailure(),
                                 GpuConvPath::kCudnnNchw, "ALGO_1");
  md.step_stats.push_back(conv);
  NodeExecStats plain = conv;
  plain.node = "other";
  plain.label.clear();
  md.step_stats.push_back(plain);
  const std::string json = ChromeTraceJson(md);
  CHECK_THAT(json, Catch::Contains("\"output_bytes\": 0, \"label\": \"conv backward data: cudnn "
                                   "NCHW via transpose algo=ALGO_1\"}"));
  // Kernels that say nothing keep the old event, with no empty label.
  CHECK_THAT(json, Catch::Contains("\"name\": \"other\""));
  CHECK(json.find("\"label\"") == json.rfind("\"label\""));
}

TEST_CASE("GPU convolution paths: past cuDNN's int descriptors only the direct kernels run",
          "[gpu_dnn][gpu_conv_path]") {
  GpuConvDesc d = FirstRunFailure();
  d.batch = int64_t{1} << 26;  // 2^26 * 9 * 8 * 5 input elements
  REQUIRE(ValidateGpuConv(d).ok());
  const Status cudnn = PlanGpuConv(d).status();
  CHECK(cudnn.code() == Code::kUnimplemented);
  CHECK(GpuConvFallsThrough(cudnn));
  // Bad sizes are every path's error, before any is tried.
  d = FirstRunFailure();
  d.out_h = 6;
  CHECK(ValidateGpuConv(d).code() == Code::kInvalidArgument);
  d = FirstRunFailure();
  d.dtype = DT_INT32;
  CHECK(ValidateGpuConv(d).code() == Code::kUnimplemented);
}

TEST_CASE("Relayout4: NHWC <-> NCHW copies fused with padding and cropping",
          "[gpu_dnn][gpu_conv_path]") {
  const dnn::Dims4 src{2, 3, 4, 5};
  auto nhwc_at = [&](int64_t n, int64_t c, int64_t h, int64_t w) {
    return ((n * src.h + h) * src.w + w) * src.c + c;
  };
  // NHWC [2,4,5,3] -> NCHW padded by (1, 2) rows and (0, 1) columns: [2,3,7,6].
  const dnn::Dims4 padded{2, 3, 7, 6};
  std::vector<int64_t> out(padded.n * padded.c * padded.h * padded.w);
  for (int64_t i = 0; i < static_cast<int64_t>(out.size()); ++i) {
    int64_t n, c, h, w;
    dnn::DecodeOffset4(/*nhwc=*/false, i, padded, &n, &c, &h, &w);
    CHECK(i == dnn::Offset4(false, n, c, h, w, padded.c, padded.h, padded.w));
    out[i] = dnn::Relayout4Source(/*src_nhwc=*/true, src, n, c, h, w, -1, 0);
    const bool inside = h >= 1 && h < 5 && w < 5;
    CHECK((out[i] >= 0) == inside);
    if (inside) CHECK(out[i] == nhwc_at(n, c, h - 1, w));
  }
  // And back: the crop at (1, 0) into NHWC gives every source element in its place.
  const int64_t total = src.n * src.c * src.h * src.w;
  for (int64_t i = 0; i < total; ++i) {
    int64_t n, c, h, w;
    dnn::DecodeOffset4(/*nhwc=*/true, i, src, &n, &c, &h, &w);
    const int64_t j = dnn::Relayout4Source(/*src_nhwc=*/false, padded, n, c, h, w, 1, 0);
    REQUIRE(j >= 0);
    CHECK(out[j] == i);
  }
}

TEST_CASE("Direct convolution kernels match the definition and are each other's adjoints",
          "[gpu_dnn][gpu_conv_path]") {
  // n, h, w, c, k, fh, fw, groups, stride, dilation, padding (top, bottom, left, right)
  const std::vector<Case> cases = {
      {3, 9, 8, 5, 6, 3, 3, 1, 2, 2, 1, 1, 1, 1, 0, 1},  // the first H100 run's failure
      {2, 5, 5, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  // SAME, stride 1
      {2, 7, 6, 4, 6, 3, 2, 2, 2, 1, 1, 2, 0, 2, 1, 0},  // groups 2, dilation, asymmetric
      {1, 6, 7, 3, 6, 3, 3, 3, 1, 2, 1, 1, 2, 1, 0, 0},  // depthwise, multiplier 2
      {2, 8, 7, 2, 3, 2, 3, 1, 3, 2, 2, 1, 0, 0, 0, 0},  // VALID, trailing rows unread
      {1, 4, 4, 2, 2, 5, 5, 1, 1, 1, 1, 1, 2, 2, 2, 2},  // filter larger than the input
  };
  for (const Case& cs : cases) {
    const dnn::ConvGeom g = cs.Geom();
    REQUIRE(g.out_h > 0);
    REQUIRE(g.out_w > 0);
    const auto x = Random(cs.n * cs.c * cs.h * cs.w, 1);
    const auto w = Random(cs.fh * cs.fw * (cs.c / cs.groups) * cs.k, 2);
    const auto dy = Random(cs.n * cs.k * g.out_h * g.out_w, 3);
    for (bool nhwc : {true, false}) {
      INFO("case in [" << cs.n << "," << cs.h << "," << cs.w << "," << cs.c << "] groups "
                       << cs.groups << (nhwc ? " NHWC" : " NCHW"));
      const auto y = Forward(g, nhwc, x, w);
      const auto ref = ReferenceForward(cs, g, nhwc, x, w);
      const dnn::Dims4 od{g.n, g.out_c, g.out_h, g.out_w};
      for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
        int64_t n, k, oh, ow;
        dnn::DecodeOffset4(nhwc, i, od, &n, &k, &oh, &ow);
        CHECK(y[i] == Approx(ref[((n * od.c + k) * od.h + oh) * od.w + ow]).epsilon(1e-12));
      }
      // <conv(x, w), dy> = <x, dconv/dx^T dy> = <w, dconv/dw^T dy>: the backward kernels are
      // the forward's adjoints, whatever the stride, dilation, padding and groups.
      const double fwd = Dot(y, dy);
      CHECK(Dot(x, BackwardData(g, nhwc, w, dy)) == Approx(fwd).epsilon(1e-12));
      CHECK(Dot(w, BackwardFilter(g, nhwc, x, dy, 1)) == Approx(fwd).epsilon(1e-12));
      // Split over threads as the kernel does, the parts add up to the same gradient.
      const auto one = BackwardFilter(g, nhwc, x, dy, 1), split = BackwardFilter(g, nhwc, x, dy, 7);
      for (size_t i = 0; i < one.size(); ++i) CHECK(split[i] == Approx(one[i]).epsilon(1e-12));
    }
  }
}

TEST_CASE("Direct convolution sums compile and agree in float", "[gpu_dnn][gpu_conv_path]") {
  const Case cs{1, 5, 5, 2, 2, 3, 3, 1, 2, 2, 1, 1, 0, 1, 0, 1};
  const dnn::ConvGeom g = cs.Geom();
  const auto xd = Random(cs.n * cs.c * cs.h * cs.w, 4);
  const auto wd = Random(cs.fh * cs.fw * cs.c * cs.k, 5);
  const std::vector<float> xf(xd.begin(), xd.end()), wf(wd.begin(), wd.end());
  const auto ref = ReferenceForward(cs, g, true, xd, wd);
  const dnn::Dims4 od{g.n, g.out_c, g.out_h, g.out_w};
  for (int64_t i = 0; i < od.n * od.c * od.h * od.w; ++i) {
    int64_t n, k, oh, ow;
    dnn::DecodeOffset4(true, i, od, &n, &k, &oh, &ow);
    const float v = dnn::DirectConvForwardAt(true, g, xf.data(), wf.data(), n, k, oh, ow);
    CHECK(v == Approx(ref[((n * od.c + k) * od.h + oh) * od.w + ow]).margin(1e-5));
  }
}

}  // namespace pf::gpu_conv_path_test
