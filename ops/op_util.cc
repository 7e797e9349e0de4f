#include "placeflow/ops/op_util.h"

namespace pf {

BroadcastPlan MakeBroadcastPlan(const Shape& a, const Shape& b, const Shape& out) {
  BroadcastPlan p;
  if (a == b) {
    p.same_shape = true;
    return p;
  }
  if (a.num_elements() == 1 && b == out) {
    p.a_scalar = true;
    return p;
  }
  if (b.num_elements() == 1 && a == out) {
    p.b_scalar = true;
    return p;
  }
  const int rank = out.rank();
  // Per-dim: input extent (1 when absent).
  auto extent = [&](const Shape& s, int d) {
    int k = d - (rank - s.rank());
    return k >= 0 ? s.dim(k) : int64_t{1};
  };
  // Collapse neighbouring dims that broadcast the same way for both inputs.
  std::vector<int64_t> dims, ea, eb;
  for (int d = 0; d < rank; ++d) {
    int64_t o = out.dim(d), xa = extent(a, d), xb = extent(b, d);
    if (o == 1) continue;
    bool ba = xa == 1, bb = xb == 1;
    if (!dims.empty() && (ea.back() == 1) == ba && (eb.back() == 1) == bb) {
      dims.back() *= o;
      ea.back() *= xa;
      eb.back() *= xb;
    } else {
      dims.push_back(o);
      ea.push_back(xa);
      eb.push_back(xb);
    }
  }
  if (dims.empty()) {
    dims = {1};
    ea = {1};
    eb = {1};
  }
  const int r = static_cast<int>(dims.size());
  p.out_dims = dims;
  p.a_strides.assign(r, 0);
  p.b_strides.assign(r, 0);
  int64_t sa = 1, sb = 1;
  for (int d = r - 1; d >= 0; --d) {
    if (ea[d] != 1) p.a_strides[d] = sa;
    if (eb[d] != 1) p.b_strides[d] = sb;
    sa *= ea[d];
    sb *= eb[d];
  }
  return p;
}

std::vector<int64_t> ToInt64(const Tensor& t) { return t.AsInt64Vector(); }

}  // namespace pf
