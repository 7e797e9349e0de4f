// Shapes and tensors under bad sizes (issue 20): checked arithmetic and errors, never a write
// past a buffer or a null buffer that looks initialised.
#include <limits>

#include "tests/testing/test_util.h"

namespace pf::shape_tensor_robust_test {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("Shape never grows past kMaxRank", "[core][robust]") {
  Shape s{1, 2, 3, 4, 5, 6, 7, 8};
  CHECK_THROWS_WITH(s.AddDim(9), Contains("Shape [1,2,3,4,5,6,7,8] cannot grow past 8 dimensions"));
  CHECK_THROWS_AS(s.InsertDim(0, 9), Error);
  CHECK(s.rank() == 8);  // unchanged
  std::vector<int64_t> nine(9, 1);
  CHECK_THROWS_WITH(Shape(std::span<const int64_t>(nine)),
                    Contains("A shape of rank 9 cannot have more than 8 dimensions"));
  CHECK_THROWS_AS((Shape{1, 1, 1, 1, 1, 1, 1, 1, 1}), Error);
  CHECK_THROWS_AS(Shape::Unknown().AddDim(1), Error);
}

TEST_CASE("Shape::num_elements is checked: -1 when the product overflows int64", "[core][robust]") {
  const int64_t big = (int64_t{1} << 62) + 1;
  CHECK(Shape{big, 4}.num_elements() == -1);
  CHECK(Shape{big, 0}.num_elements() == 0);
  CHECK(Shape{0, big, big}.num_elements() == 0);
  CHECK(Shape{int64_t{1} << 31, int64_t{1} << 31}.num_elements() == int64_t{1} << 62);
  CHECK(Shape{std::numeric_limits<int64_t>::max()}.num_elements() ==
        std::numeric_limits<int64_t>::max());
  CHECK(Shape{-1, 4}.num_elements() == -1);
  // Dims below -1 print as themselves, not as "?".
  CHECK(Shape{-7, 2}.ToString() == "[-7,2]");
  CHECK(Shape{-1, 2}.ToString() == "[?,2]");
}

TEST_CASE("Tensor: a failed allocation throws ResourceExhausted, bad shapes InvalidArgument",
          "[core][robust]") {
  // 2^60 floats: no allocator has 4 EiB.
  const Shape huge{int64_t{1} << 40, int64_t{1} << 20};
  try {
    Tensor t(DT_FLOAT, huge);
    FAIL("allocated " << t.TotalBytes() << " bytes");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kResourceExhausted);
    CHECK_THAT(e.what(), Contains("OOM when allocating tensor with shape [1099511627776,1048576] "
                                  "and type float") &&
                             Contains("by allocator cpu"));
  }
  // 2^62 floats: the byte count overflows size_t (it must not wrap to a small buffer).
  CHECK_THROWS_WITH(Tensor(DT_FLOAT, Shape{int64_t{1} << 31, int64_t{1} << 31}),
                    Contains("OOM when allocating tensor with shape [2147483648,2147483648]"));
  CHECK_THROWS_WITH(Tensor(DT_FLOAT, Shape{(int64_t{1} << 62) + 1, 4}),
                    Contains("Cannot allocate a tensor of shape [4611686018427387905,4]: more "
                             "than 9223372036854775807 elements"));
  CHECK_THROWS_WITH(Tensor(DT_FLOAT, Shape{-1, 3}),
                    Contains("Cannot allocate a tensor of shape [?,3]: not fully defined"));
  // The allocator overload stays checkable, as documented, and never wraps either.
  Tensor t(CpuAllocator(), DT_FLOAT, Shape{int64_t{1} << 31, int64_t{1} << 31});
  CHECK_FALSE(t.IsInitialized());
  auto a = Tensor::Allocate(CpuAllocator(), DT_FLOAT, huge);
  REQUIRE_FALSE(a.ok());
  CHECK(a.status().code() == Code::kResourceExhausted);
  auto b = Tensor::Allocate(CpuAllocator(), DT_FLOAT, Shape{2, 3});
  REQUIRE(b.ok());
  CHECK(b->num_elements() == 6);
}

}  // namespace
}  // namespace pf::shape_tensor_robust_test
