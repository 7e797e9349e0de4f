#include "placeflow/core/shape.h"

#include <algorithm>
#include <cassert>

namespace pf {

Shape::Shape(std::initializer_list<int64_t> dims)
    : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  assert(dims.size() <= kMaxRank);
  rank_ = static_cast<int>(std::min<size_t>(dims.size(), kMaxRank));
  std::copy_n(dims.begin(), rank_, dims_.begin());
}

Shape Shape::Unknown() {
  Shape s;
  s.rank_ = -1;
  return s;
}

StatusOr<Shape> Shape::FromDims(std::span<const int64_t> dims) {
  if (dims.size() > kMaxRank) {
    return errors::InvalidArgument("Rank ", dims.size(), " exceeds the maximum rank ", kMaxRank);
  }
  for (int64_t d : dims) {
    if (d < -1) return errors::InvalidArgument("Dimension ", d, " must be >= -1");
  }
  return Shape(dims);
}

void Shape::AddDim(int64_t d) {
  assert(rank_ >= 0 && rank_ < kMaxRank);
  dims_[rank_++] = d;
}

void Shape::RemoveDim(int i) {
  for (int j = i; j + 1 < rank_; ++j) dims_[j] = dims_[j + 1];
  --rank_;
}

void Shape::InsertDim(int i, int64_t d) {
  assert(rank_ < kMaxRank);
  for (int j = rank_; j > i; --j) dims_[j] = dims_[j - 1];
  dims_[i] = d;
  ++rank_;
}

bool Shape::IsFullyDefined() const {
  if (rank_ < 0) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] < 0) return false;
  }
  return true;
}

int64_t Shape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

bool Shape::IsCompatibleWith(const Shape& o) const {
  if (unknown_rank() || o.unknown_rank()) return true;
  if (rank_ != o.rank_) return false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] >= 0 && o.dims_[i] >= 0 && dims_[i] != o.dims_[i]) return false;
  }
  return true;
}

Shape Shape::MergeWith(const Shape& o) const {
  if (unknown_rank()) return o;
  if (o.unknown_rank()) return *this;
  Shape r = *this;
  for (int i = 0; i < rank_; ++i) {
    if (r.dims_[i] < 0) r.dims_[i] = o.dims_[i];
  }
  return r;
}

std::string Shape::ToString() const {
  if (rank_ < 0) return "<unknown>";
  std::string s = "[";
  for (int i = 0; i < rank_; ++i) {
    if (i) s += ',';
    s += dims_[i] < 0 ? std::string("?") : std::to_string(dims_[i]);
  }
  return s + "]";
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  return std::equal(dims_.begin(), dims_.begin() + std::max(rank_, 0), o.dims_.begin());
}

}  // namespace pf
