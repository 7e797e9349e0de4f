// BlockLSTM and BlockLSTMGrad (TensorFlow's ops of those names, tf.raw_ops.BlockLSTM, which TF
// 1.x's LSTMBlockFusedCell builds): a whole LSTM sequence in one kernel, so that the inputs'
// share of every step's gates is one GEMM over all steps, the gradient of the weights one GEMM
// over all steps, and a step costs one small GEMM and the gates' elementwise math, with no
// executor work in between. layers::DynamicRnn runs an LSTMCell through it (train/rnn.cc).
//
// Gates as TensorFlow's LSTMBlockCell (and layers::LSTMCell): [i, ci, f, o] = [x, h] w + b;
//   i = sigmoid(i + cs_prev wci), ci = tanh(ci), f = sigmoid(f + forget_bias + cs_prev wcf),
//   cs = clip(ci i + cs_prev f), o = sigmoid(o + cs wco), co = tanh(cs), h = co o
// (the peephole terms only with use_peephole; the clip only for cell_clip > 0). Steps from
// seq_len_max on output zeros, and their gradients are zero.
//
// Float runs the rows' math on the Highway kernels of ops/simd (the same functions as the
// Sigmoid and Tanh ops, so a fused step gives the bits of the unfused one up to the GEMMs'
// summation order); double runs loops (gradient checks).
#include <algorithm>
#include <cmath>
#include <optional>
#include <type_traits>

#include "placeflow/ops/grad_util.h"
#include "placeflow/ops/math/matmul.h"
#include "placeflow/ops/op_util.h"
#include "placeflow/ops/ops.h"
#include "placeflow/ops/simd/packed_gemm.h"
#include "placeflow/ops/simd/vec_kernels.h"

namespace pf {
namespace {

// --- one batch entry's step: the Highway kernels for float, the same math in loops for double ---

using CellArgs = simd::LstmCellArgsOf<double>;
using CellGradArgs = simd::LstmCellGradArgsOf<double>;

void Cell(const simd::LstmCellArgs& a, int64_t n) { simd::LstmCell(a, n); }
void Cell(const CellArgs& a, int64_t n) {
  auto sigmoid = [](double v) { return 1 / (1 + std::exp(-v)); };
  for (int64_t k = 0; k < n; ++k) {
    double zi = a.z[k], zf = a.z[2 * n + k] + a.forget_bias, zo = a.z[3 * n + k];
    if (a.wci != nullptr) {
      zi += a.cs_prev[k] * a.wci[k];
      zf += a.cs_prev[k] * a.wcf[k];
    }
    a.i[k] = sigmoid(zi);
    a.ci[k] = std::tanh(a.z[n + k]);
    a.f[k] = sigmoid(zf);
    double cs = a.i[k] * a.ci[k] + a.f[k] * a.cs_prev[k];
    if (a.cell_clip > 0) cs = std::clamp<double>(cs, -a.cell_clip, a.cell_clip);
    if (a.wco != nullptr) zo += cs * a.wco[k];
    a.cs[k] = cs;
    a.o[k] = sigmoid(zo);
    a.co[k] = std::tanh(cs);
    a.h[k] = a.co[k] * a.o[k];
  }
}

void CellGrad(const simd::LstmCellGradArgs& a, int64_t n) { simd::LstmCellGrad(a, n); }
void CellGrad(const CellGradArgs& a, int64_t n) {
  for (int64_t k = 0; k < n; ++k) {
    const double i = a.i[k], f = a.f[k], o = a.o[k], ci = a.ci[k], co = a.co[k],
                 dh = a.h_grad[k] + a.dh_next[k];
    const double d_o = dh * co * o * (1 - o);
    double dcs = a.cs_grad[k] + a.dcs[k] + dh * o * (1 - co * co);
    if (a.wco != nullptr) dcs += d_o * a.wco[k];
    if (a.cell_clip > 0 && std::abs(a.cs[k]) >= a.cell_clip) dcs = 0;
    const double di = dcs * ci * i * (1 - i), df = dcs * a.cs_prev[k] * f * (1 - f);
    a.dz[k] = di;
    a.dz[n + k] = dcs * i * (1 - ci * ci);
    a.dz[2 * n + k] = df;
    a.dz[3 * n + k] = d_o;
    a.dcs[k] = dcs * f + (a.wci != nullptr ? di * a.wci[k] + df * a.wcf[k] : 0);
  }
}

// --- arguments ---

struct LstmAttrs {
  float forget_bias = 1.f, cell_clip = -1.f;
  bool peephole = false;
};

struct LstmDims {
  int64_t steps = 0, batch = 0, depth = 0, units = 0;
  int64_t live = 0;  // min(seq_len_max, steps)
};

// Inputs 1..8 of both ops (x, cs_prev, h_prev, w, wci, wcf, wco, b) against one another, as
// TensorFlow checks them; unknown dims pass (shape functions at build time).
Status CheckLstmShapes(const std::string& op, const std::vector<const Shape*>& in) {
  const char* names[] = {"x", "cs_prev", "h_prev", "w", "wci", "wcf", "wco", "b"};
  const int ranks[] = {3, 2, 2, 2, 1, 1, 1, 1};
  for (int k = 0; k < 8; ++k) {
    if (!in[k]->unknown_rank() && in[k]->rank() != ranks[k]) {
      return errors::InvalidArgument(op, ": ", names[k], " must be rank ", ranks[k], ", got ",
                                     in[k]->ToString());
    }
  }
  auto dim = [&](int k, int d) { return in[k]->unknown_rank() ? -1 : in[k]->dim(d); };
  const int64_t batch = dim(0, 1), depth = dim(0, 2), units = dim(1, 1);
  auto differ = [](int64_t a, int64_t b) { return a >= 0 && b >= 0 && a != b; };
  const bool bad = differ(dim(1, 0), batch) || differ(dim(2, 0), batch) ||
                   differ(dim(2, 1), units) || differ(dim(3, 1), 4 * units) ||
                   (depth >= 0 && units >= 0 && differ(dim(3, 0), depth + units)) ||
                   differ(dim(4, 0), units) || differ(dim(5, 0), units) ||
                   differ(dim(6, 0), units) || differ(dim(7, 0), 4 * units);
  if (bad) {
    std::string shapes;
    for (int k = 0; k < 8; ++k)
      shapes += fmt::format("{}{} {}", k ? ", " : "", names[k], in[k]->ToString());
    return errors::InvalidArgument(
        op, ": shapes do not agree (want x [T, B, D], cs_prev and h_prev [B, H], w [D + H, 4H], ",
        "wci, wcf and wco [H], b [4H]): ", shapes);
  }
  return Status::OK();
}

std::vector<const Shape*> LstmShapesOf(ShapeContext& c) {
  std::vector<const Shape*> in;
  for (int k = 1; k <= 8; ++k) in.push_back(&c.input(k));
  return in;
}

StatusOr<LstmDims> ReadDims(OpKernelContext* ctx, const std::string& op) {
  std::vector<const Shape*> in;
  for (int k = 1; k <= 8; ++k) in.push_back(&ctx->input(k).shape());
  PF_RETURN_IF_ERROR(CheckLstmShapes(op, in));
  const Tensor& len = ctx->input(0);
  if (len.shape().rank() != 0)
    return errors::InvalidArgument(op, ": seq_len_max must be a scalar, got ",
                                   len.shape().ToString());
  LstmDims d;
  d.steps = in[0]->dim(0);
  d.batch = in[0]->dim(1);
  d.depth = in[0]->dim(2);
  d.units = in[1]->dim(1);
  const int64_t max_len = len.scalar<int64_t>();
  if (max_len < 0) return errors::InvalidArgument(op, ": seq_len_max is negative: ", max_len);
  d.live = std::min(max_len, d.steps);
  return d;
}

template <typename T>
const T* In(OpKernelContext* ctx, int i) {
  return ctx->input(i).data<T>();
}

template <typename T>
StatusOr<T*> Out(OpKernelContext* ctx, int i) {
  PF_ASSIGN_OR_RETURN(Tensor * t, ctx->AllocateOutput(i));
  return t->data<T>();
}

template <typename T>
StatusOr<Tensor> Temp(OpKernelContext* ctx, int64_t rows, int64_t cols) {
  return Tensor::Allocate(ctx->params().allocator, DataTypeOf<T>(), Shape{rows, cols});
}

// A cell step's peephole weights: inputs 5, 6 and 7 (wci, wcf, wco) of both ops.
template <typename T, typename Args>
void SetPeepholes(OpKernelContext* ctx, Args* c) {
  c->wci = In<T>(ctx, 5);
  c->wcf = In<T>(ctx, 6);
  c->wco = In<T>(ctx, 7);
}

// Runs fn(r0, r1) over [0, n) in one contiguous block per intra-op thread (blocks of at least 8):
// an LSTM's batch entries are independent, so a block of entries runs every step alone, with no
// synchronisation between steps, and its GEMMs stay as tall as they can (ParallelFor's shards,
// up to 4 per thread, would give GEMMs of 8 rows).
template <typename Fn>
void ForBlocks(OpKernelContext* ctx, int64_t n, int64_t cost_per_unit, Fn&& fn) {
  const int64_t threads = std::max<int64_t>(1, IntraOpPool(ctx)->num_threads());
  const int64_t blocks = std::clamp<int64_t>(n / 8, 1, threads);
  const int64_t per = (n + blocks - 1) / blocks;
  ParallelFor(ctx, blocks, cost_per_unit * per,
              [&](int64_t b0, int64_t b1) { fn(b0 * per, std::min(n, b1 * per)); });
}

// The backward pass's step product for a block of rows, dh [m, H] = dz [m, 4H] w_h^T, with w_h
// [H, 4H] the same in every step: float multiplies w_h^T packed once per kernel (simd::GemmPacked,
// pf-bench lstm_gemm: 1.2-1.35x oneDNN's sgemm, which packs it again in every call, on AVX2 and
// AVX-512; the forward's h_prev w_h gains nothing from it and stays on sgemm), double through
// Gemm.
template <typename T>
class StepGradProduct {
 public:
  StepGradProduct(const T* wh, int64_t units) : wh_(wh), h_(units) {
    if constexpr (std::is_same_v<T, float>) packed_.emplace(wh, 4 * units, true, 4 * units, units);
  }
  void operator()(int64_t m, const T* dz, T* dh) const {
    if constexpr (std::is_same_v<T, float>) {
      simd::GemmPacked(m, dz, 4 * h_, *packed_, 0.f, dh, h_);
    } else {
      Gemm(false, true, m, h_, 4 * h_, dz, 4 * h_, wh_, 4 * h_, T(0), dh, h_);
    }
  }

 private:
  const T* wh_;
  int64_t h_;
  std::optional<simd::PackedMatrix> packed_;
};

// --- the forward pass ---

LstmAttrs ReadAttrs(const Node& n) {
  LstmAttrs a;
  a.peephole = n.attr<bool>("use_peephole");
  a.cell_clip = n.attr<float>("cell_clip");
  if (n.attrs().count("forget_bias")) a.forget_bias = n.attr<float>("forget_bias");
  return a;
}

template <typename T>
class BlockLstmOp : public OpKernel {
 public:
  explicit BlockLstmOp(const Node& n) : OpKernel(n), attrs_(ReadAttrs(n)) {}

  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(const LstmDims d, ReadDims(ctx, "BlockLSTM '" + name() + "'"));
    const int64_t B = d.batch, D = d.depth, H = d.units, G = 4 * H;
    T* out[7];
    for (int k = 0; k < 7; ++k) {
      PF_ASSIGN_OR_RETURN(out[k], Out<T>(ctx, k));
      std::fill(out[k] + d.live * B * H, out[k] + d.steps * B * H, T(0));
    }
    if (d.live == 0 || B == 0 || H == 0) return Status::OK();
    const T *x = In<T>(ctx, 1), *w = In<T>(ctx, 4), *b = In<T>(ctx, 8);
    // Every live step's gates from x at once: z = x w_x + b, [live B, 4H].
    PF_ASSIGN_OR_RETURN(Tensor zt, Temp<T>(ctx, d.live * B, G));
    T* z = zt.data<T>();
    ForBlocks(ctx, d.live * B, 2 * D * G, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) std::copy(b, b + G, z + r * G);
      Gemm(false, false, r1 - r0, G, D, x + r0 * D, D, w, G, T(1), z + r0 * G, G);
    });
    const T* wh = w + D * G;
    ForBlocks(ctx, B, d.live * (2 * H * G + 20 * H), [&](int64_t r0, int64_t r1) {
      for (int64_t t = 0; t < d.live; ++t) {
        const int64_t at = t * B * H;
        const T* h_prev = t == 0 ? In<T>(ctx, 3) : out[6] + at - B * H;
        const T* cs_prev = t == 0 ? In<T>(ctx, 2) : out[1] + at - B * H;
        T* zs = z + t * B * G;
        Gemm(false, false, r1 - r0, G, H, h_prev + r0 * H, H, wh, G, T(1), zs + r0 * G, G);
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t e = at + r * H;
          simd::LstmCellArgsOf<T> c{zs + r * G, cs_prev + r * H};
          if (attrs_.peephole) SetPeepholes<T>(ctx, &c);
          c.forget_bias = attrs_.forget_bias;
          c.cell_clip = attrs_.cell_clip;
          c.i = out[0] + e, c.cs = out[1] + e, c.f = out[2] + e, c.o = out[3] + e;
          c.ci = out[4] + e, c.co = out[5] + e, c.h = out[6] + e;
          Cell(c, H);
        }
      }
    });
    return Status::OK();
  }

 private:
  LstmAttrs attrs_;
};

// --- the backward pass ---

// Inputs of BlockLSTMGrad: 0 seq_len_max, 1 x, 2 cs_prev, 3 h_prev, 4 w, 5 wci, 6 wcf, 7 wco,
// 8 b, 9 i, 10 cs, 11 f, 12 o, 13 ci, 14 co, 15 h, 16 cs_grad, 17 h_grad. Outputs: 0 x_grad,
// 1 cs_prev_grad, 2 h_prev_grad, 3 w_grad, 4 wci_grad, 5 wcf_grad, 6 wco_grad, 7 b_grad.
template <typename T>
class BlockLstmGradOp : public OpKernel {
 public:
  explicit BlockLstmGradOp(const Node& n) : OpKernel(n), attrs_(ReadAttrs(n)) {}

  Status Compute(OpKernelContext* ctx) override {
    PF_ASSIGN_OR_RETURN(const LstmDims d, ReadDims(ctx, "BlockLSTMGrad '" + name() + "'"));
    for (int k = 9; k <= 17; ++k) {
      if (ctx->input(k).shape() != Shape{d.steps, d.batch, d.units}) {
        return errors::InvalidArgument("BlockLSTMGrad '", name(), "': input ", k, " is ",
                                       ctx->input(k).shape().ToString(), ", want ",
                                       Shape{d.steps, d.batch, d.units}.ToString());
      }
    }
    const int64_t B = d.batch, D = d.depth, H = d.units, G = 4 * H;
    T* out[8];
    for (int k = 0; k < 8; ++k) {
      PF_ASSIGN_OR_RETURN(out[k], Out<T>(ctx, k));
      std::fill(out[k], out[k] + ctx->mutable_output(k)->num_elements(), T(0));
    }
    if (d.live == 0 || B == 0 || H == 0) return Status::OK();
    // Every live step's gate gradients, [live B, 4H]; dh and dcs run backwards through the steps
    // in h_prev_grad's and cs_prev_grad's outputs.
    PF_ASSIGN_OR_RETURN(Tensor dzt, Temp<T>(ctx, d.live * B, G));
    T* dz = dzt.data<T>();
    T *dcs = out[1], *dh_next = out[2];
    const StepGradProduct<T> dh_of(In<T>(ctx, 4) + D * G, H);
    ForBlocks(ctx, B, d.live * (2 * H * G + 30 * H), [&](int64_t r0, int64_t r1) {
      for (int64_t t = d.live - 1; t >= 0; --t) {
        const int64_t at = t * B * H;
        const T* cs_prev = t == 0 ? In<T>(ctx, 2) : In<T>(ctx, 10) + at - B * H;
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t e = at + r * H;
          simd::LstmCellGradArgsOf<T> c{In<T>(ctx, 9) + e,  In<T>(ctx, 10) + e, In<T>(ctx, 11) + e,
                                        In<T>(ctx, 12) + e, In<T>(ctx, 13) + e, In<T>(ctx, 14) + e,
                                        cs_prev + r * H};
          if (attrs_.peephole) SetPeepholes<T>(ctx, &c);
          c.cell_clip = attrs_.cell_clip;
          c.h_grad = In<T>(ctx, 17) + e;
          c.dh_next = dh_next + r * H;
          c.cs_grad = In<T>(ctx, 16) + e;
          c.dcs = dcs + r * H;
          c.dz = dz + (t * B + r) * G;
          CellGrad(c, H);
        }
        // h_prev's gradient: dz wh^T.
        dh_of(r1 - r0, dz + (t * B + r0) * G, dh_next + r0 * H);
      }
    });
    WeightGrads(ctx, d, dz, out);
    return Status::OK();
  }

 private:
  // After the steps, from every step's gate gradients dz at once: x's, w's, b's and the
  // peepholes' gradients.
  void WeightGrads(OpKernelContext* ctx, const LstmDims& d, const T* dz, T* const* out) const {
    const int64_t B = d.batch, D = d.depth, H = d.units, G = 4 * H, rows = d.live * B;
    const T *x = In<T>(ctx, 1), *w = In<T>(ctx, 4), *h = In<T>(ctx, 15);
    ForBlocks(ctx, rows, 2 * D * G, [&](int64_t r0, int64_t r1) {
      Gemm(false, true, r1 - r0, D, G, dz + r0 * G, G, w, G, T(0), out[0] + r0 * D, D);
    });
    // w's gradient [D + H, 4H] = [x, h_prev]^T dz, and b's, split by columns of dz.
    T* wg = out[3];
    ForBlocks(ctx, G, 2 * (D + H) * rows, [&](int64_t c0, int64_t c1) {
      const int64_t n = c1 - c0;
      Gemm(true, false, D, n, rows, x, D, dz + c0, G, T(0), wg + c0, G);
      Gemm(true, false, H, n, B, In<T>(ctx, 3), H, dz + c0, G, T(0), wg + D * G + c0, G);
      if (rows > B)
        Gemm(true, false, H, n, rows - B, h, H, dz + B * G + c0, G, T(1), wg + D * G + c0, G);
      for (int64_t r = 0; r < rows; ++r) AddRow(dz + r * G + c0, out[7] + c0, n);
    });
    if (!attrs_.peephole) return;
    // wci: sum of di cs_prev, wcf: of df cs_prev, wco: of do cs.
    const T* cs = In<T>(ctx, 10);
    for (int64_t r = 0; r < rows; ++r) {
      const T* cs_prev = r < B ? In<T>(ctx, 2) + r * H : cs + (r - B) * H;
      const T* z = dz + r * G;
      for (int64_t k = 0; k < H; ++k) {
        out[4][k] += z[k] * cs_prev[k];
        out[5][k] += z[2 * H + k] * cs_prev[k];
        out[6][k] += z[3 * H + k] * cs[r * H + k];
      }
    }
  }

  LstmAttrs attrs_;
};

// --- shapes, gradient, registration ---

// The first known of several dims (-1 when none is).
int64_t FirstKnown(std::initializer_list<int64_t> dims) {
  for (int64_t d : dims)
    if (d >= 0) return d;
  return -1;
}

Status BlockLstmShape(ShapeContext& c) {
  PF_RETURN_IF_ERROR(c.WithRank(0, 0));
  PF_RETURN_IF_ERROR(CheckLstmShapes("BlockLSTM", LstmShapesOf(c)));
  auto dim = [&](int k, int d) { return c.input(k).unknown_rank() ? -1 : c.input(k).dim(d); };
  auto quarter = [](int64_t d) { return d < 0 ? d : d / 4; };
  const int64_t batch = FirstKnown({dim(1, 1), dim(2, 0), dim(3, 0)});
  const int64_t units =
      FirstKnown({dim(2, 1), dim(3, 1), quarter(dim(4, 1)), dim(5, 0), quarter(dim(8, 0))});
  for (int k = 0; k < 7; ++k) c.set_output(k, Shape{dim(1, 0), batch, units});
  return Status::OK();
}

Status BlockLstmGradShape(ShapeContext& c) {
  PF_RETURN_IF_ERROR(c.WithRank(0, 0));
  PF_RETURN_IF_ERROR(CheckLstmShapes("BlockLSTMGrad", LstmShapesOf(c)));
  for (int k = 1; k <= 8; ++k) c.set_output(k - 1, c.input(k));
  return Status::OK();
}

// TensorFlow's _BlockLSTMGrad: the gradients of cs and h flow back; the gate outputs (i, f, o,
// ci, co) are for the gradient alone, and a gradient reaching them is Unimplemented.
PF_GRAD(BlockLstmGrad) {
  static const char* gates[] = {"i", "", "f", "o", "ci", "co"};
  for (int k : {0, 2, 3, 4, 5}) {
    const Node* from = g[k].node;
    const bool zeros = from == nullptr || (from->op() == "ZerosLike" && from->input(0).node == &n);
    if (!zeros) {
      return errors::Unimplemented("BlockLSTM '", n.name(), "': no gradient through its gate ",
                                   "output '", gates[k], "' (only cs and h carry gradients)");
    }
  }
  NodeBuilder b(s, "BlockLSTMGrad");
  for (int k = 0; k < 9; ++k) b.Input(n.input(k));
  for (int k = 0; k < 7; ++k) b.Input(Out(n, k));
  Node* grad = b.Input(g[1])
                   .Input(g[6])
                   .Attr("use_peephole", n.attr<bool>("use_peephole"))
                   .Attr("cell_clip", n.attr<float>("cell_clip"))
                   .Finalize();
  dx->assign(9, Output());
  for (int k = 0; k < 8; ++k) (*dx)[k + 1] = Output(grad, k);
  return Status::OK();
}

#define PF_LSTM_INPUTS(def)         \
  def.Input("seq_len_max", "int64") \
      .Input("x", "T")              \
      .Input("cs_prev", "T")        \
      .Input("h_prev", "T")         \
      .Input("w", "T")              \
      .Input("wci", "T")            \
      .Input("wcf", "T")            \
      .Input("wco", "T")            \
      .Input("b", "T")

PF_REGISTER_OP(PF_LSTM_INPUTS(OpDef("BlockLSTM"))
                   .Output("i", "T")
                   .Output("cs", "T")
                   .Output("f", "T")
                   .Output("o", "T")
                   .Output("ci", "T")
                   .Output("co", "T")
                   .Output("h", "T")
                   .Attr("forget_bias", 1.f)
                   .Attr("cell_clip", 3.f)  // TensorFlow's default; its Python cells pass -1
                   .Attr("use_peephole", false)
                   .TypeAttr("T", {DT_FLOAT, DT_DOUBLE})
                   .SetGradient(BlockLstmGrad)
                   .SetShapeFn(BlockLstmShape));
// cell_clip is placeflow's addition (TensorFlow's gradient ignores the clip): the gradient
// stops where the forward pass clipped.
PF_REGISTER_OP(PF_LSTM_INPUTS(OpDef("BlockLSTMGrad"))
                   .Input("i", "T")
                   .Input("cs", "T")
                   .Input("f", "T")
                   .Input("o", "T")
                   .Input("ci", "T")
                   .Input("co", "T")
                   .Input("h", "T")
                   .Input("cs_grad", "T")
                   .Input("h_grad", "T")
                   .Output("x_grad", "T")
                   .Output("cs_prev_grad", "T")
                   .Output("h_prev_grad", "T")
                   .Output("w_grad", "T")
                   .Output("wci_grad", "T")
                   .Output("wcf_grad", "T")
                   .Output("wco_grad", "T")
                   .Output("b_grad", "T")
                   .Attr("use_peephole", false)
                   .Attr("cell_clip", -1.f)
                   .TypeAttr("T", {DT_FLOAT, DT_DOUBLE})
                   .SetNoGradient()  // a second derivative fails instead of being zero
                   .SetShapeFn(BlockLstmGradShape));
#undef PF_LSTM_INPUTS

PF_REGISTER_KERNEL(KernelDef("BlockLSTM", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   BlockLstmOp<float>);
PF_REGISTER_KERNEL(KernelDef("BlockLSTM", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   BlockLstmOp<double>);
PF_REGISTER_KERNEL(KernelDef("BlockLSTMGrad", kDeviceCpu).TypeConstraint("T", {DT_FLOAT}),
                   BlockLstmGradOp<float>);
PF_REGISTER_KERNEL(KernelDef("BlockLSTMGrad", kDeviceCpu).TypeConstraint("T", {DT_DOUBLE}),
                   BlockLstmGradOp<double>);

}  // namespace

namespace ops {

BlockLstmOutputs BlockLSTM(const Scope& s, Output seq_len_max, Output x, Output cs_prev,
                           Output h_prev, Output w, Output wci, Output wcf, Output wco, Output b,
                           const BlockLstmAttrs& attrs) {
  Node* n = NodeBuilder(s, "BlockLSTM")
                .Input(seq_len_max)
                .Input(x)
                .Input(cs_prev)
                .Input(h_prev)
                .Input(w)
                .Input(wci)
                .Input(wcf)
                .Input(wco)
                .Input(b)
                .Attr("forget_bias", attrs.forget_bias)
                .Attr("cell_clip", attrs.cell_clip)
                .Attr("use_peephole", attrs.use_peephole)
                .Finalize();
  return {Output(n, 0), Output(n, 1), Output(n, 2), Output(n, 3),
          Output(n, 4), Output(n, 5), Output(n, 6)};
}

}  // namespace ops
}  // namespace pf
