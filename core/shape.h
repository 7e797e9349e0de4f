// Tensor shapes. A dimension of -1 is unknown; Shape::Unknown() has unknown rank.
// Shapes print as TensorFlow does: "[3,4]", "[?,600]", "<unknown>".
// A shape never holds more than kMaxRank dims: the constructors, AddDim and InsertDim throw
// pf::Error (InvalidArgument) instead (shape functions turn it into a Status).
//
//   pf::Shape s{-1, 600};
//   s.rank() == 2; s.IsFullyDefined() == false; s.ToString() == "[?,600]";
//   pf::Shape{2, 3}.num_elements() == 6;
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "placeflow/core/status.h"

namespace pf {

class Shape {
 public:
  static constexpr int kMaxRank = 8;

  Shape() = default;  // a scalar: rank 0
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);
  static Shape Unknown();
  static StatusOr<Shape> FromDims(std::span<const int64_t> dims);  // checks rank and dims >= -1

  bool unknown_rank() const { return rank_ < 0; }
  int rank() const { return rank_; }  // -1 when unknown
  int64_t dim(int i) const { return dims_[i]; }
  void set_dim(int i, int64_t d) { dims_[i] = d; }
  std::span<const int64_t> dims() const {
    return {dims_.data(), static_cast<size_t>(rank_ < 0 ? 0 : rank_)};
  }
  std::vector<int64_t> dim_vector() const { return {dims().begin(), dims().end()}; }
  void AddDim(int64_t d);
  void RemoveDim(int i);
  void InsertDim(int i, int64_t d);

  bool IsFullyDefined() const;
  // Product of dims; -1 when not fully defined or when the product overflows int64 (checked
  // arithmetic: a dim of 0 makes it 0 whatever the others are).
  int64_t num_elements() const;
  // True when every known dim of both agrees (unknown dims match anything).
  bool IsCompatibleWith(const Shape& other) const;
  // The more specific of two compatible shapes.
  Shape MergeWith(const Shape& other) const;

  std::string ToString() const;
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  void CheckCanGrow() const;

  int rank_ = 0;
  std::array<int64_t, kMaxRank> dims_{};
};

}  // namespace pf

template <>
struct fmt::formatter<pf::Shape> : fmt::formatter<std::string> {
  auto format(const pf::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string>::format(s.ToString(), ctx);
  }
};
