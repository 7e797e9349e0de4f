// Cast between every pair of numeric dtypes against a reference written apart from the kernel
// (tests/ops/dtype_reference.h), its errors for strings, where it is placed when a device has no
// kernel for a dtype, and the documented decode recipe ParseExample -> DecodeRaw -> Cast.
#include <cmath>
#include <limits>

#include "placeflow/graph/kernel.h"
#if defined(PF_WITH_PROTOBUF)
#include "placeflow/graph/proto_codecs.h"
#endif
#include "placeflow/ops/op_util.h"
#include "placeflow/placer/placer.h"
#include "tests/ops/dtype_reference.h"
#include "tests/testing/fake_devices.h"
#include "tests/testing/test_util.h"

namespace pf::cast_ops_test {
namespace {

using Catch::Matchers::Contains;
using testing::ElementAsDouble;
using testing::IsIntegerDType;
using testing::RefConvert;
using testing::SameValue;
using testing::TensorOfDoubles;

const DType kNumeric[] = {DT_FLOAT, DT_DOUBLE, DT_HALF,  DT_BFLOAT16, DT_INT8,
                          DT_INT16, DT_INT32,  DT_INT64, DT_UINT8,    DT_BOOL};

// Values of dtype `t` that probe the conversions: fractions, the small types' limits and one
// past them, large values, and for floating types NaN and the infinities. Each is first made
// a value of `t` (the reference's rounding or wrap-around), so the tensor holds it exactly.
std::vector<double> ProbeValues(DType t) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> raw;
  if (t == DT_BOOL) {
    raw = {0, 1};
  } else if (IsIntegerDType(t)) {
    raw = {0,     1,     -1,    127,    128,   -128,       -129,          255,  256,  300,
           32767, 32768, 32769, -32769, 65535, 2147483647, -2147483648.0, 1e12, -1e12};
  } else {
    raw = {0,     -0.0,  0.4,          1,     -1,    2.5,  -2.5,         3.7,     -3.7,
           127.9, 128,   -128.5,       255.5, 256,   300,  -129,         32767.5, 32768,
           65504, 70000, 2147483648.0, 1e10,  -1e10, 1e20, std::nan(""), inf,     -inf};
  }
  std::vector<double> values;
  for (double v : raw) values.push_back(RefConvert(v, IsIntegerDType(t), t));
  return values;
}

TEST_CASE("Cast converts between every pair of numeric dtypes as documented", "[ops][dtype]") {
  for (DType src : kNumeric) {
    const std::vector<double> in = ProbeValues(src);
    const Tensor x = TensorOfDoubles(src, {static_cast<int64_t>(in.size())}, in);
    for (DType dst : kNumeric) {
      INFO(DTypeName(src) << " -> " << DTypeName(dst));
      Graph g;
      Scope root = Scope::Root(&g);
      Output y = ops::Cast(root, ops::Const(root, x), dst);
      REQUIRE(y.dtype() == dst);
      Tensor got = testing::RunOne(g, y);
      REQUIRE(got.dtype() == dst);
      for (size_t i = 0; i < in.size(); ++i) {
        INFO("element " << i << ": " << in[i]);
        CHECK(SameValue(ElementAsDouble(got, i), RefConvert(in[i], IsIntegerDType(src), dst)));
      }
    }
  }
}

TEST_CASE("Cast's documented corner cases", "[ops][dtype]") {
  auto cast = [](DType from, std::vector<double> v, DType to) {
    Graph g;
    Scope root = Scope::Root(&g);
    const int64_t n = static_cast<int64_t>(v.size());
    Tensor out =
        testing::RunOne(g, ops::Cast(root, ops::Const(root, TensorOfDoubles(from, {n}, v)), to));
    std::vector<double> r;
    for (int64_t i = 0; i < n; ++i) r.push_back(ElementAsDouble(out, i));
    return r;
  };
  // Truncation toward zero; NaN is 0; out of range saturates.
  CHECK(cast(DT_FLOAT, {2.9, -2.9, std::nan(""), 1e10, -1e10}, DT_INT32) ==
        std::vector<double>{2, -2, 0, 2147483647, -2147483648.0});
  CHECK(cast(DT_FLOAT, {-1, 255.9, 256, 300}, DT_UINT8) == std::vector<double>{0, 255, 255, 255});
  // Integer to integer wraps around (two's complement).
  CHECK(cast(DT_INT32, {300, -1, 128}, DT_UINT8) == std::vector<double>{44, 255, 128});
  CHECK(cast(DT_INT32, {300, 128, -129}, DT_INT8) == std::vector<double>{44, -128, 127});
  // Bool: nonzero (NaN too) is true; true is 1.
  CHECK(cast(DT_FLOAT, {0, -0.0, 0.5, std::nan("")}, DT_BOOL) == std::vector<double>{0, 0, 1, 1});
  CHECK(cast(DT_BOOL, {0, 1}, DT_HALF) == std::vector<double>{0, 1});
  // Half: ties to even (2049 lies between 2048 and 2050), 65520 and up is inf.
  CHECK(cast(DT_FLOAT, {2049, 2051, 65519, 65520}, DT_HALF) ==
        std::vector<double>{2048, 2052, 65504, std::numeric_limits<double>::infinity()});
  // bfloat16 keeps 8 significant bits: 257 is a tie (to 256), 259 rounds up to 260.
  CHECK(cast(DT_FLOAT, {257, 259, 1.00390625}, DT_BFLOAT16) == std::vector<double>{256, 260, 1});
}

TEST_CASE("Cast to or from string is InvalidArgument", "[ops][dtype][errors]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output s = ops::Const(root, Tensor::Scalar<std::string>("3"));
  try {
    ops::Cast(root.WithOpName("to_float"), s, DT_FLOAT);
    FAIL("Cast of a string was built");
  } catch (const Error& e) {
    CHECK(e.code() == Code::kInvalidArgument);
    CHECK_THAT(e.what(), Contains("Cast string to float is not supported: string is not a "
                                  "numeric dtype (SrcT); Cast converts between float, double"));
    CHECK_THAT(e.what(), Contains("to_float"));
  }
  Output f = ops::Const(root, Tensor::Scalar<float>(3));
  CHECK_THROWS_WITH(ops::Cast(root, f, DT_STRING),
                    Contains("Cast float to string is not supported: string is not a numeric "
                             "dtype (DstT)"));
  CHECK_THROWS_WITH(ops::Cast(root, s, DT_STRING), Contains("Cast string to string"));
}

// A device type with Cast kernels only for the dtypes the GPU's Cast takes
// (ops/array/fill_ops_gpu.cc: float, double, int32, int64, bool).
PF_REGISTER_KERNEL(KernelDef("Cast", "DTYPE_GPU")
                       .TypeConstraint("SrcT", kComputableTypes)
                       .TypeConstraint("DstT", kComputableTypes),
                   testing::FakeKernel);
PF_REGISTER_KERNEL(KernelDef("Const", "DTYPE_GPU"), testing::FakeKernel);

TEST_CASE("A Cast of a dtype the device has no kernel for is soft-placed on the CPU",
          "[ops][dtype][placer]") {
  DeviceSet devices;
  devices.Add(std::make_unique<testing::FakeDevice>("DTYPE_GPU", 0, 200, false));
  devices.Add(std::make_unique<testing::FakeDevice>("CPU", 0, 100, true));
  Graph g;
  Scope root = Scope::Root(&g);
  Scope gpu = root.WithDevice("/device:DTYPE_GPU:0");
  Output bytes = ops::Const(root, Tensor(DT_UINT8, {4}));
  Output from_uint8 = ops::Cast(gpu.WithOpName("from_uint8"), bytes, DT_FLOAT);
  Output to_int32 = ops::Cast(gpu.WithOpName("to_int32"), from_uint8, DT_INT32);
  auto strict = Place(g.nodes(), devices, PlacerOptions{});
  REQUIRE_FALSE(strict.ok());
  CHECK_THAT(strict.status().message(),
             Contains("Cannot assign a device for operation from_uint8"));
  PlacerOptions soft_options;
  soft_options.allow_soft_placement = true;
  auto soft = Place(g.nodes(), devices, soft_options);
  REQUIRE(soft.ok());
  CHECK(soft->device.at(from_uint8.node)->device_type() == "CPU");
  CHECK(soft->device.at(to_int32.node)->device_type() ==
        "DTYPE_GPU");  // float -> int32 has a kernel
}

TEST_CASE("int8, int16 and half tensors cross between CPU devices", "[ops][dtype]") {
  Graph g;
  Scope root = Scope::Root(&g);
  std::vector<Output> fetches;
  for (DType t : {DT_INT8, DT_INT16, DT_HALF}) {
    Output c = ops::Const(root.WithDevice("/cpu:1"), TensorOfDoubles(t, {3}, {-7, 0, 100}));
    fetches.push_back(ops::Cast(root.WithDevice("/cpu:0"), ops::Identity(root, c), DT_FLOAT));
  }
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  Session sess(g, opts);
  for (const Tensor& out : sess.Run({}, fetches)) {
    CHECK(out.ToVector<float>() == std::vector<float>{-7, 0, 100});
  }
}

#if defined(PF_WITH_PROTOBUF)
TEST_CASE("The small integer dtypes have TF's DataType numbers and round-trip as TensorProtos",
          "[ops][dtype][graph_def]") {
  CHECK(DTypeToProto(DT_UINT8).value() == 4);  // TF's types.proto numbers
  CHECK(DTypeToProto(DT_INT16).value() == 5);
  CHECK(DTypeToProto(DT_INT8).value() == 6);
  CHECK(DTypeFromProto(5).value() == DT_INT16);
  CHECK(DTypeFromProto(6).value() == DT_INT8);
  const Tensor t = TensorOfDoubles(DT_INT8, {3}, {-128, 5, 127});
  tensorflow::TensorProto p;
  REQUIRE(TensorToProto(t, &p).ok());
  const Tensor back = TensorFromProto(p).value();
  REQUIRE(back.dtype() == DT_INT8);
  for (int i = 0; i < 3; ++i) CHECK(ElementAsDouble(back, i) == ElementAsDouble(t, i));
  // TF writes a small Const's values in int_val.
  tensorflow::TensorProto q;
  q.set_dtype(tensorflow::DT_INT16);
  q.mutable_tensor_shape()->add_dim()->set_size(2);
  q.add_int_val(-300);
  q.add_int_val(7);
  const Tensor r = TensorFromProto(q).value();
  REQUIRE(r.dtype() == DT_INT16);
  CHECK(r.data<int16_t>()[0] == -300);
  CHECK(r.data<int16_t>()[1] == 7);
}

// docs/data.md's recipe: serialized tf.train.Example -> ParseExample -> DecodeRaw(uint8) ->
// Cast(float) / 255, against the bytes themselves.
TEST_CASE("ParseExample, DecodeRaw(uint8) and Cast(float) decode images end to end",
          "[ops][dtype][parse]") {
  const int kBatch = 3, kPixels = 784;
  Tensor serialized(DT_STRING, {kBatch});
  std::vector<std::string> raw(kBatch);
  for (int b = 0; b < kBatch; ++b) {
    for (int i = 0; i < kPixels; ++i) raw[b].push_back(static_cast<char>((i * 7 + b * 31) % 256));
    serialized.flat<std::string>()[b] =
        io::ExampleBuilder().AddBytes("image_raw", {raw[b]}).AddInt64("label", {b + 4}).Serialize();
  }
  Graph g;
  Scope root = Scope::Root(&g);
  Output in = ops::Placeholder(root, DT_STRING, {-1});
  io::ExampleSpec spec;
  spec.fixed.push_back({"image_raw", DT_STRING, Shape{}, Tensor()});
  spec.fixed.push_back({"label", DT_INT64, Shape{}, Tensor()});
  ops::ParsedExampleOutputs p = ops::ParseExample(root, in, spec);
  Output pixels = ops::DecodeRaw(root, p.dense[0], DT_UINT8);
  Output images = ops::Mul(root, ops::Cast(root, pixels, DT_FLOAT),
                           ops::Const(root, Tensor::Scalar<float>(1.f / 255)));
  Output labels = ops::Cast(root, p.dense[1], DT_INT32);
  Session sess(g);
  auto out = sess.Run({{in, serialized}}, {images, labels});
  REQUIRE(out[0].shape() == Shape({kBatch, kPixels}));
  for (int b = 0; b < kBatch; ++b) {
    CHECK(out[1].data<int32_t>()[b] == b + 4);
    for (int i = 0; i < kPixels; ++i) {
      const float want = static_cast<float>(static_cast<uint8_t>(raw[b][i])) * (1.f / 255);
      REQUIRE(out[0].data<float>()[b * kPixels + i] == want);
    }
  }
}
#endif  // PF_WITH_PROTOBUF

}  // namespace
}  // namespace pf::cast_ops_test
