#include "placeflow/core/shape.h"

#include <algorithm>

namespace pf {

Shape::Shape(std::initializer_list<int64_t> dims)
    : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  // Always checked: dims_ is a fixed array, and a release build must not write past it.
  if (dims.size() > kMaxRank) {
    throw Error(errors::InvalidArgument("A shape of rank ", dims.size(), " cannot have more than ",
                                        kMaxRank, " dimensions"));
  }
  rank_ = static_cast<int>(dims.size());
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

void Shape::CheckCanGrow() const {
  if (rank_ < 0)
    throw Error(errors::InvalidArgument("Cannot add a dimension to a shape of unknown rank"));
  if (rank_ >= kMaxRank) {
    throw Error(errors::InvalidArgument("Shape ", ToString(), " cannot grow past ", kMaxRank,
                                        " dimensions"));
  }
}

void Shape::AddDim(int64_t d) {
  CheckCanGrow();
  dims_[rank_++] = d;
}

void Shape::RemoveDim(int i) {
  for (int j = i; j + 1 < rank_; ++j) dims_[j] = dims_[j + 1];
  --rank_;
}

void Shape::InsertDim(int i, int64_t d) {
  CheckCanGrow();
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
  bool overflow = false;
  for (int i = 0; i < rank_; ++i) {
    if (dims_[i] == 0) return 0;
    overflow = overflow || __builtin_mul_overflow(n, dims_[i], &n);
  }
  return overflow ? -1 : n;
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
    // Only -1 means unknown; other negative dims are bad input and print as themselves.
    s += dims_[i] == -1 ? std::string("?") : std::to_string(dims_[i]);
  }
  return s + "]";
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  return std::equal(dims_.begin(), dims_.begin() + std::max(rank_, 0), o.dims_.begin());
}

}  // namespace pf
