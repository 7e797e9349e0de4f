// The elementwise ops and the reductions on every dtype of docs/api.md's "Dtypes" table, each
// against a naive loop in double whose result is converted to the dtype the reference way
// (tests/ops/dtype_reference.h): integers wrap around, half and bfloat16 round to nearest even.
#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "tests/ops/dtype_reference.h"
#include "tests/testing/test_util.h"

namespace pf::dtype_math_test {
namespace {

using testing::ElementAsDouble;
using testing::IsIntegerDType;
using testing::RefConvert;
using testing::SameValue;
using testing::TensorOfDoubles;

const std::vector<DType> kAll = {DT_FLOAT, DT_DOUBLE, DT_HALF,  DT_BFLOAT16, DT_INT8,
                                 DT_INT16, DT_INT32,  DT_INT64, DT_UINT8};
const std::vector<DType> kSigned = {DT_FLOAT, DT_DOUBLE, DT_HALF,  DT_BFLOAT16,
                                    DT_INT8,  DT_INT16,  DT_INT32, DT_INT64};
const std::vector<DType> kFloating = {DT_FLOAT, DT_DOUBLE, DT_HALF, DT_BFLOAT16};
const std::vector<DType> kDivTypes = {DT_FLOAT, DT_DOUBLE, DT_HALF,  DT_BFLOAT16,
                                      DT_INT16, DT_INT32,  DT_INT64, DT_UINT8};

// Relative tolerance of a floating result: one unit in the last place of the dtype (the kernels
// compute half and bfloat16 in float and libm's float functions differ from double's in the
// last bits); integers must match exactly.
double Tolerance(DType t) {
  switch (t) {
    case DT_HALF:
      return std::ldexp(1.0, -10);
    case DT_BFLOAT16:
      return std::ldexp(1.0, -7);
    case DT_FLOAT:
      return 2e-7;
    case DT_DOUBLE:
      return 1e-15;
    default:
      return 0;
  }
}

// n values of dtype t: integers over most of the type's range (so that sums and products wrap
// in the small types; within [-3, 3] where `small`), floating values in [lo, hi] in multiples of
// `step` (exact in every dtype).
std::vector<double> Values(DType t, int64_t n, uint32_t seed, double lo, double hi,
                           double step = 0.125, bool small = false) {
  std::mt19937 rng(seed);
  std::vector<double> v(n);
  for (double& x : v) {
    if (IsIntegerDType(t)) {
      int range = t == DT_INT8 ? 100 : t == DT_UINT8 ? 250 : t == DT_INT16 ? 3000 : 1000;
      if (small) range = 3;
      const int low = t == DT_UINT8 ? 0 : -range;
      x = std::uniform_int_distribution<int>(low, range)(rng);
      if (lo > 0 && x <= 0) x = 1 + (-x);  // positive operands where the case asks for them
    } else {
      x = std::round(std::uniform_real_distribution<double>(lo, hi)(rng) / step) * step;
    }
    x = RefConvert(x, IsIntegerDType(t), t);
  }
  return v;
}

void CheckAgainst(const Tensor& got, const std::vector<double>& want, DType t) {
  REQUIRE(static_cast<int64_t>(want.size()) == got.num_elements());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("element " << i);
    CHECK(SameValue(ElementAsDouble(got, i), want[i], Tolerance(t)));
  }
}

struct UnaryCase {
  const char* name;
  Output (*build)(const Scope&, Output);
  std::function<double(double)> ref;
  std::vector<DType> types;
  double lo, hi;
};

TEST_CASE("Unary elementwise ops on every documented dtype", "[ops][dtype][math]") {
  const std::vector<UnaryCase> cases = {
      {"Neg", ops::Neg, [](double a) { return -a; }, kSigned, -8, 8},
      {"Square", ops::Square, [](double a) { return a * a; }, kAll, -8, 8},
      {"Sqrt", ops::Sqrt, [](double a) { return std::sqrt(a); }, kFloating, 0.125, 8},
      {"Rsqrt", ops::Rsqrt, [](double a) { return 1 / std::sqrt(a); }, kFloating, 0.125, 8},
      {"Exp", ops::Exp, [](double a) { return std::exp(a); }, kFloating, -4, 4},
      {"Log", ops::Log, [](double a) { return std::log(a); }, kFloating, 0.125, 8},
      {"Floor", ops::Floor, [](double a) { return std::floor(a); }, kFloating, -8, 8},
  };
  for (const UnaryCase& c : cases) {
    for (DType t : c.types) {
      INFO(c.name << " " << DTypeName(t));
      const std::vector<double> x = Values(t, 24, 1, c.lo, c.hi);
      Graph g;
      Scope root = Scope::Root(&g);
      Output y = c.build(root, ops::Const(root, TensorOfDoubles(t, {4, 6}, x)));
      Tensor got = testing::RunOne(g, y);
      REQUIRE(got.dtype() == t);
      std::vector<double> want;
      for (double v : x) want.push_back(RefConvert(c.ref(v), IsIntegerDType(t), t));
      CheckAgainst(got, want, t);
    }
  }
}

struct BinaryCase {
  const char* name;
  Output (*build)(const Scope&, Output, Output);
  std::function<double(double, double)> ref;
  std::vector<DType> types;
  double lo, hi;
  bool compare;  // a bool output
};

// x [3, 4] op y [4] (y broadcast over the rows), against the naive loop.
void CheckBinary(const BinaryCase& c, DType t) {
  INFO(c.name << " " << DTypeName(t));
  const std::vector<double> x = Values(t, 12, 2, c.lo, c.hi);
  std::vector<double> y = Values(t, 4, 3, c.lo, c.hi);
  if (c.compare) y[0] = x[0], y[1] = x[1];  // some equal pairs
  Graph g;
  Scope root = Scope::Root(&g);
  Output z = c.build(root, ops::Const(root, TensorOfDoubles(t, {3, 4}, x)),
                     ops::Const(root, TensorOfDoubles(t, {4}, y)));
  Tensor got = testing::RunOne(g, z);
  REQUIRE(got.dtype() == (c.compare ? DT_BOOL : t));
  REQUIRE(got.shape() == Shape({3, 4}));
  std::vector<double> want;
  for (int i = 0; i < 12; ++i) {
    const double r = c.ref(x[i], y[i % 4]);
    want.push_back(c.compare ? r : RefConvert(r, IsIntegerDType(t), t));
  }
  CheckAgainst(got, want, c.compare ? DT_BOOL : t);
}

TEST_CASE("Binary elementwise ops and comparisons on every documented dtype",
          "[ops][dtype][math]") {
  const std::vector<BinaryCase> cases = {
      {"Add", ops::Add, [](double a, double b) { return a + b; }, kAll, -8, 8, false},
      {"Sub", ops::Sub, [](double a, double b) { return a - b; }, kAll, -8, 8, false},
      {"Mul", ops::Mul, [](double a, double b) { return a * b; }, kAll, -8, 8, false},
      // Integer Div truncates toward zero; positive operands keep the divisor nonzero.
      {"Div", ops::Div, [](double a, double b) { return a / b; }, kFloating, 0.125, 8, false},
      {"Maximum", ops::Maximum, [](double a, double b) { return std::max(a, b); }, kAll, -8, 8,
       false},
      {"Minimum", ops::Minimum, [](double a, double b) { return std::min(a, b); }, kAll, -8, 8,
       false},
      {"Pow", ops::Pow, [](double a, double b) { return std::pow(a, b); }, kFloating, 0.5, 2,
       false},
      {"Equal", ops::Equal, [](double a, double b) { return double(a == b); }, kAll, -2, 2, true},
      {"Less", ops::Less, [](double a, double b) { return double(a < b); }, kAll, -8, 8, true},
      {"Greater", ops::Greater, [](double a, double b) { return double(a > b); }, kAll, -8, 8,
       true},
      // A small range, so that equal pairs occur in the integer types.
      {"NotEqual", ops::NotEqual, [](double a, double b) { return double(a != b); }, kAll, -2, 2,
       true},
      {"LessEqual", ops::LessEqual, [](double a, double b) { return double(a <= b); }, kAll, -2, 2,
       true},
      {"GreaterEqual", ops::GreaterEqual, [](double a, double b) { return double(a >= b); }, kAll,
       -2, 2, true},
  };
  for (const BinaryCase& c : cases) {
    for (DType t : c.types) CheckBinary(c, t);
  }
  const BinaryCase int_div = {
      "Div", ops::Div, [](double a, double b) { return std::trunc(a / b); }, {}, 1, 8, false};
  for (DType t : kDivTypes) {
    if (IsIntegerDType(t)) CheckBinary(int_div, t);
  }
}

TEST_CASE("Integer Div by zero is an error on the small integer types", "[ops][dtype][math]") {
  for (DType t : {DT_INT16, DT_UINT8}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output z = ops::Div(root, ops::Const(root, TensorOfDoubles(t, {2}, {4, 6})),
                        ops::Const(root, TensorOfDoubles(t, {2}, {2, 0})));
    CHECK_THROWS_WITH(testing::RunOne(g, z), Catch::Matchers::Contains("Integer division by zero"));
  }
}

// The naive reduction of x [rows, cols] over `axes` (empty: all): integers accumulate with
// wrap-around after each step, floating values in double, rounded once.
std::vector<double> NaiveReduce(const std::string& op, const std::vector<double>& x, int rows,
                                int cols, const std::vector<int32_t>& axes, DType t) {
  const bool all = axes.empty();
  const bool over_rows = all || std::count(axes.begin(), axes.end(), 0) > 0;
  const bool over_cols = all || std::count(axes.begin(), axes.end(), 1) > 0 ||
                         std::count(axes.begin(), axes.end(), -1) > 0;
  const int out_rows = over_rows ? 1 : rows, out_cols = over_cols ? 1 : cols;
  const bool integer = IsIntegerDType(t);
  std::vector<double> out;
  for (int orow = 0; orow < out_rows; ++orow) {
    for (int ocol = 0; ocol < out_cols; ++ocol) {
      double acc = op == "Prod" ? 1 : op == "Max" ? -INFINITY : op == "Min" ? INFINITY : 0;
      int count = 0;
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < cols; ++c) {
          if ((!over_rows && r != orow) || (!over_cols && c != ocol)) continue;
          const double v = x[r * cols + c];
          acc = op == "Prod"  ? acc * v
                : op == "Max" ? std::max(acc, v)
                : op == "Min" ? std::min(acc, v)
                              : acc + v;
          if (integer) acc = RefConvert(acc, true, t);
          ++count;
        }
      }
      if (op == "Mean") acc = integer ? std::trunc(acc / count) : acc / count;
      out.push_back(RefConvert(acc, integer, t));
    }
  }
  return out;
}

TEST_CASE("Sum, Mean, Prod, Max and Min on every documented dtype", "[ops][dtype][math]") {
  using BuildFn = Output (*)(const Scope&, Output, const std::vector<int32_t>&, bool);
  const std::vector<std::pair<std::string, BuildFn>> reductions = {{"Sum", ops::Sum},
                                                                   {"Mean", ops::Mean},
                                                                   {"Prod", ops::Prod},
                                                                   {"Max", ops::Max},
                                                                   {"Min", ops::Min}};
  const std::vector<std::vector<int32_t>> axes_cases = {{}, {0}, {1}, {-1}, {0, 1}};
  for (const auto& [name, build] : reductions) {
    for (DType t : kAll) {
      // Prod's factors are multiples of 1/2 in [-2, 2] (integers in [-3, 3]): its products
      // of 15 are exact in float (3^15 < 2^24), and int32/int64 do not overflow.
      const bool prod = name == "Prod";
      std::vector<double> x =
          Values(t, 15, 4, prod ? -2 : -8, prod ? 2 : 8, prod ? 0.5 : 0.125, prod);
      if (prod) std::replace(x.begin(), x.end(), 0.0, 1.0);  // zeros would hide the product
      for (const auto& axes : axes_cases) {
        INFO(name << " " << DTypeName(t) << " axes " << axes.size() << " "
                  << (axes.empty() ? 9 : axes[0]));
        Graph g;
        Scope root = Scope::Root(&g);
        Output y = build(root, ops::Const(root, TensorOfDoubles(t, {3, 5}, x)), axes, false);
        Tensor got = testing::RunOne(g, y);
        REQUIRE(got.dtype() == t);
        CheckAgainst(got, NaiveReduce(name, x, 3, 5, axes, t), t);
      }
    }
  }
}

TEST_CASE("Integer reductions wrap around like TF's", "[ops][dtype][math]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output x = ops::Const(root, TensorOfDoubles(DT_UINT8, {3}, {200, 100, 10}));
  Output i8 = ops::Const(root, TensorOfDoubles(DT_INT8, {2}, {100, 100}));
  Session sess(g);
  auto out = sess.Run(
      {}, {ops::Sum(root, x), ops::Mean(root, x), ops::Sum(root, i8), ops::Mean(root, i8)});
  CHECK(out[0].scalar<uint8_t>() == 54);  // 310 mod 256
  CHECK(out[1].scalar<uint8_t>() == 18);  // 54 / 3
  CHECK(out[2].scalar<int8_t>() == -56);  // 200 wraps to -56
  CHECK(out[3].scalar<int8_t>() == -28);  // -56 / 2
}

TEST_CASE("Prod's gradient is the product of the others, zeros included", "[ops][dtype][math]") {
  for (const std::vector<double>& v :
       std::vector<std::vector<double>>{{2, 3, 4, 5}, {2, 0, 4, 5}, {0, 3, 0, 5}}) {
    Graph g;
    Scope root = Scope::Root(&g);
    Output x = ops::Const(root, TensorOfDoubles(DT_FLOAT, {2, 2}, v));
    Output y = ops::Prod(root, x, {1});
    Tensor got = testing::RunOne(g, Gradients(root, {y}, {x})[0]);
    // d/dx[r][c] of x[r][0] * x[r][1] is the other element of the row.
    const std::vector<double> want = {v[1], v[0], v[3], v[2]};
    for (int i = 0; i < 4; ++i) CHECK(got.data<float>()[i] == want[i]);
  }
}

}  // namespace
}  // namespace pf::dtype_math_test
