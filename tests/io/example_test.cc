// tf.Example parsing (io/example.h and the ParseExample graph op; protobuf builds only) and
// DecodeRaw (every build). Expected values come from how each test built its examples.
#include "tests/testing/test_util.h"

namespace pf::example_test {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("DecodeRaw reinterprets bytes, little- and big-endian", "[io][ops][decode_raw]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output bytes = ops::Placeholder(root.WithOpName("bytes"), DT_STRING, {-1});
  Output as_u8 = ops::DecodeRaw(root, bytes, DT_UINT8);
  Output as_i32 = ops::DecodeRaw(root, bytes, DT_INT32);
  Output as_i32_be = ops::DecodeRaw(root, bytes, DT_INT32, /*little_endian=*/false);
  CHECK(as_u8.shape() == Shape{-1, -1});
  Session sess(g);
  // Two strings of 8 bytes: int32 1, 2 and -1, 256 (little-endian).
  const std::string a("\x01\0\0\0\x02\0\0\0", 8), b("\xff\xff\xff\xff\0\x01\0\0", 8);
  std::vector<Tensor> out =
      sess.Run({{bytes, Tensor::FromVector<std::string>({a, b})}}, {as_u8, as_i32, as_i32_be});
  CHECK(out[0].shape() == Shape{2, 8});
  CHECK(out[0].ToVector<uint8_t>()[0] == 1);
  CHECK(out[0].ToVector<uint8_t>()[8] == 255);
  CHECK(out[1].shape() == Shape{2, 2});
  CHECK(out[1].ToVector<int32_t>() == std::vector<int32_t>{1, 2, -1, 256});
  CHECK(out[2].ToVector<int32_t>() == std::vector<int32_t>{0x01000000, 0x02000000, -1, 0x00010000});

  CHECK_THROWS_WITH(sess.Run({{bytes, Tensor::FromVector<std::string>({a, "abc"})}}, {as_u8}),
                    Contains("element 1 has size 3 != 8"));
  CHECK_THROWS_WITH(sess.Run({{bytes, Tensor::FromVector<std::string>({"abcde"})}}, {as_i32}),
                    Contains("length 5 that is not a multiple of 4, the size of int32"));
}

#if defined(PF_WITH_PROTOBUF)

std::vector<std::string> SomeExamples() {
  io::ExampleBuilder e0, e1, e2;
  e0.AddInt64("label", {7}).AddFloat("w", {0.5f, 1.5f, -2.f}).AddBytes("name", {"zero"});
  e0.AddInt64("ids", {1, 2, 3});
  e1.AddInt64("label", {-1}).AddFloat("w", {3.f, 4.f, 5.f});  // no name: default; no ids
  e2.AddInt64("label", {9}).AddFloat("w", {6.f, 7.f, 8.f}).AddBytes("name", {"two"});
  e2.AddInt64("ids", {42});
  return {e0.Serialize(), e1.Serialize(), e2.Serialize()};
}

io::ExampleSpec SomeSpec() {
  io::ExampleSpec spec;
  spec.fixed.push_back({"label", DT_INT64, {}, Tensor()});
  spec.fixed.push_back({"w", DT_FLOAT, {3}, Tensor()});
  spec.fixed.push_back({"name", DT_STRING, {}, Tensor::Scalar<std::string>("none")});
  spec.var_len.push_back({"ids", DT_INT64});
  return spec;
}

TEST_CASE("ParseExamples: fixed-length, defaults and variable-length features", "[io][example]") {
  const std::vector<std::string> ser = SomeExamples();
  io::ParsedExamples p = io::ParseExamples(ser, SomeSpec()).value();
  REQUIRE(p.dense.size() == 3);
  CHECK(p.dense[0].ToVector<int64_t>() == std::vector<int64_t>{7, -1, 9});
  CHECK(p.dense[1].shape() == Shape{3, 3});
  CHECK(p.dense[1].ToVector<float>() ==
        std::vector<float>{0.5f, 1.5f, -2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f});
  CHECK(p.dense[2].ToVector<std::string>() == std::vector<std::string>{"zero", "none", "two"});
  REQUIRE(p.sparse.size() == 1);
  CHECK(p.sparse[0].indices.shape() == Shape{4, 2});
  CHECK(p.sparse[0].indices.ToVector<int64_t>() == std::vector<int64_t>{0, 0, 0, 1, 0, 2, 2, 0});
  CHECK(p.sparse[0].values.ToVector<int64_t>() == std::vector<int64_t>{1, 2, 3, 42});
  CHECK(p.sparse[0].dense_shape.ToVector<int64_t>() == std::vector<int64_t>{3, 3});

  io::ParsedExamples one = io::ParseSingleExample(ser[0], SomeSpec()).value();
  CHECK(one.dense[0].shape() == Shape{});
  CHECK(one.dense[0].scalar<int64_t>() == 7);
  CHECK(one.sparse[0].indices.ToVector<int64_t>() == std::vector<int64_t>{0, 1, 2});
  CHECK(one.sparse[0].dense_shape.ToVector<int64_t>() == std::vector<int64_t>{3});
  // The builder serializes deterministically, and DescribeExample reads it back.
  CHECK(SomeExamples()[0] == ser[0]);
  CHECK(io::DescribeExample(ser[0]).value() ==
        "ids: int64 [3] 1 2 3\nlabel: int64 [1] 7\nname: bytes [1] 'zero'\nw: float [3] 0.5 1.5 "
        "-2\n");
}

TEST_CASE("ParseExamples errors name the key, index, dtypes and counts", "[io][example]") {
  std::vector<std::string> ser = SomeExamples();
  io::ExampleSpec spec = SomeSpec();
  SECTION("a required feature is missing") {
    spec.fixed.push_back({"height", DT_INT64, {}, Tensor()});
    CHECK(io::ParseExamples(ser, spec).status().message() ==
          "Name: <unknown>, Feature: height (data type: int64) is required but could not be "
          "found.");
  }
  SECTION("the dtype differs") {
    spec.fixed[0].dtype = DT_FLOAT;
    CHECK(io::ParseExamples(ser, spec).status().message() ==
          "Name: <unknown>, Key: label, Index: 0.  Data types don't match. Data type: int64 but "
          "expected type: float");
  }
  SECTION("the count differs") {
    spec.fixed[1].shape = Shape{2};
    std::vector<std::string> names = {"a", "b", "c"};
    CHECK(io::ParseExamples(ser, spec, names).status().message() ==
          "Name: a, Key: w, Index: 0.  Number of float values != expected.  Values size: 3 but "
          "output shape: [2]");
  }
  SECTION("bytes that are no tf.Example") {
    ser[1] = std::string("\xff\xff\xff", 3);
    StatusOr<io::ParsedExamples> p = io::ParseExamples(ser, spec);
    CHECK(p.status().code() == Code::kInvalidArgument);
    CHECK_THAT(p.status().message(),
               Contains("Index: 1.  Could not parse example input, value: '\\xff\\xff\\xff'"));
  }
  SECTION("a bad spec") {
    spec.var_len.push_back({"ids", DT_INT64});
    CHECK_THAT(io::ParseExamples(ser, spec).status().message(), Contains("'ids' appears twice"));
    spec.var_len.pop_back();
    spec.fixed[0].dtype = DT_INT32;
    CHECK_THAT(io::ParseExamples(ser, spec).status().message(),
               Contains("float, int64 and string"));
  }
}

TEST_CASE("The ParseExample graph op parses a fed batch, then DecodeRaw decodes the bytes",
          "[io][example][ops]") {
  std::vector<std::string> ser;
  for (int i = 0; i < 4; ++i) {
    std::string pixels(6, '\0');
    for (int k = 0; k < 6; ++k) pixels[k] = static_cast<char>(i * 10 + k);
    ser.push_back(
        io::ExampleBuilder().AddBytes("image_raw", {pixels}).AddInt64("label", {i}).Serialize());
  }
  Graph g;
  Scope root = Scope::Root(&g);
  Output in = ops::Placeholder(root.WithOpName("serialized"), DT_STRING, {-1});
  io::ExampleSpec spec;
  spec.fixed.push_back({"image_raw", DT_STRING, {}, Tensor()});
  spec.fixed.push_back({"label", DT_INT64, {}, Tensor()});
  spec.var_len.push_back({"label", DT_INT64});
  CHECK_THROWS_WITH(ops::ParseExample(root, in, spec), Contains("appears twice"));
  spec.var_len.back().key = "missing";
  ops::ParsedExampleOutputs p = ops::ParseExample(root, in, spec);
  Output pixels = ops::DecodeRaw(root, p.dense[0], DT_UINT8);
  CHECK(p.dense[1].shape() == Shape{-1});
  Session sess(g);
  std::vector<Tensor> out = sess.Run({{in, Tensor::FromVector<std::string>(ser)}},
                                     {pixels, p.dense[1], p.sparse_indices[0], p.sparse_shapes[0]});
  CHECK(out[0].shape() == Shape{4, 6});
  CHECK(out[0].ToVector<uint8_t>()[3 * 6 + 5] == 35);
  CHECK(out[1].ToVector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(out[2].shape() == Shape{0, 2});
  CHECK(out[3].ToVector<int64_t>() == std::vector<int64_t>{4, 0});
  // A parse error at run time names the key and the example.
  ser[2] = io::ExampleBuilder().AddBytes("image_raw", {"x"}).Serialize();
  CHECK_THROWS_WITH(sess.Run({{in, Tensor::FromVector<std::string>(ser)}}, {p.dense[1]}),
                    Contains("Feature: label (data type: int64) is required"));
}

#endif  // PF_WITH_PROTOBUF

}  // namespace
}  // namespace pf::example_test
