// DT_STRING and DT_UINT8 tensors: construction, deep copies, comparison, printing, and the places
// that must never memcpy std::string elements (device copies, device allocators).
#include "placeflow/devices/copy_registry.h"
#include "tests/testing/fake_devices.h"
#include "tests/testing/test_util.h"

namespace pf::tensor_test {
namespace {

using Catch::Matchers::Contains;

TEST_CASE("DT_STRING and DT_UINT8: names, sizes, C++ types", "[core][string]") {
  CHECK(DTypeName(DT_STRING) == "string");
  CHECK(DTypeName(DT_UINT8) == "uint8");
  CHECK(ParseDType("string").value() == DT_STRING);
  CHECK(ParseDType("uint8").value() == DT_UINT8);
  CHECK(DTypeSize(DT_UINT8) == 1);
  CHECK(DTypeSize(DT_STRING) == sizeof(std::string));
  CHECK_FALSE(DTypeIsPod(DT_STRING));
  CHECK(DTypeIsPod(DT_UINT8));
  static_assert(DataTypeOf<std::string>() == DT_STRING);
  static_assert(DataTypeOf<uint8_t>() == DT_UINT8);
}

TEST_CASE("String tensors start empty, hold values, and copy deeply", "[core][string]") {
  Tensor t(DT_STRING, {2, 2});
  for (const std::string& s : t.flat<std::string>()) CHECK(s.empty());
  // Longer than any small-string buffer: heap storage the buffer must free (ASan checks).
  const std::string long_value(1000, 'x');
  t.flat<std::string>()[0] = "a";
  t.flat<std::string>()[3] = long_value;

  Tensor copy = t.Clone();
  CHECK_FALSE(copy.SharesBufferWith(t));
  CHECK(copy.BitwiseEqual(t));
  copy.flat<std::string>()[0] = "b";  // the original keeps its value
  CHECK(t.flat<std::string>()[0] == "a");
  CHECK_FALSE(copy.BitwiseEqual(t));
  CHECK(copy.flat<std::string>()[3] == long_value);

  // Equal values in different buffers compare equal (values, not the std::string objects).
  Tensor a = Tensor::FromVector<std::string>({"x", "yy"});
  Tensor b = Tensor::FromVector<std::string>({"x", "yy"});
  CHECK(a.BitwiseEqual(b));
  CHECK_FALSE(a.BitwiseEqual(Tensor::FromVector<std::string>({"x", "y"})));
  CHECK(Tensor::Scalar<std::string>("hello").scalar<std::string>() == "hello");
  CHECK_THROWS_WITH(a.flat<float>(), Contains("dtype string"));

  // Views share the strings, and the strings outlive the tensor that made them.
  Tensor row;
  {
    Tensor m = Tensor::FromVector<std::string>({"r0a", "r0b", "r1a", long_value}, {2, 2});
    row = m.SliceRows(1, 2).value();
  }
  CHECK(row.ToVector<std::string>() == std::vector<std::string>{"r1a", long_value});
  CHECK(row.Reshaped({2}).value().flat<std::string>()[1] == long_value);
}

TEST_CASE("String and uint8 tensors print quoted, escaped, elided", "[core][string]") {
  Tensor t = Tensor::FromVector<std::string>({"ab", "q\"\\\n\x01", std::string(70, 'z')});
  CHECK(t.DebugString() ==
        "Tensor<string [3]> [\"ab\", \"q\\\"\\\\\\n\\x01\", \"" + std::string(64, 'z') + "\"...]");
  CHECK(Tensor::Scalar<std::string>("s").DebugString() == "Tensor<string []> \"s\"");
  CHECK(Tensor::FromVector<uint8_t>({0, 255}).DebugString() == "Tensor<uint8 [2]> [0, 255]");
  CHECK(Tensor(DT_STRING, {0}).DebugString() == "Tensor<string [0]> ");
}

// Memory only a device can read: a DT_STRING tensor must not be placed there.
class DeviceOnlyAllocator : public Allocator {
 public:
  std::string Name() const override { return "fake_device_memory"; }
  void* Allocate(size_t bytes) override { return CpuAllocator()->Allocate(bytes); }
  void Free(void* p, size_t bytes) override { CpuAllocator()->Free(p, bytes); }
  bool host_accessible() const override { return false; }
};

TEST_CASE("String tensors are refused in device memory and by device copies", "[core][string]") {
  DeviceOnlyAllocator device_memory;
  StatusOr<Tensor> t = Tensor::Allocate(&device_memory, DT_STRING, {3});
  REQUIRE_FALSE(t.ok());
  CHECK_THAT(t.status().message(),
             Contains("host memory only") && Contains("[3]") && Contains("fake_device_memory"));
  CHECK(Tensor::Allocate(&device_memory, DT_UINT8, {3}).ok());  // bytes may go anywhere

  DeviceSet devices = testing::FakeDeviceSet(2, 1);
  Device* cpu0 = devices.Find("/job:localhost/replica:0/task:0/device:CPU:0");
  Device* cpu1 = devices.Find("/job:localhost/replica:0/task:0/device:CPU:1");
  Device* gpu = devices.Find("/job:localhost/replica:0/task:0/device:FAKE_GPU:0");
  REQUIRE(cpu0 != nullptr);
  REQUIRE(cpu1 != nullptr);
  REQUIRE(gpu != nullptr);
  Tensor s = Tensor::FromVector<std::string>({"a", "b", "c"});
  StatusOr<Tensor> to_gpu = CopyRegistry::Global()->Copy(s, cpu0, gpu);
  REQUIRE_FALSE(to_gpu.ok());
  CHECK(to_gpu.status().code() == Code::kInvalidArgument);
  CHECK_THAT(to_gpu.status().message(), Contains("string tensor of shape [3]") &&
                                            Contains("FAKE_GPU:0") && Contains("host memory only"));
  // Between CPU devices the receiver shares the sender's strings.
  StatusOr<Tensor> to_cpu1 = CopyRegistry::Global()->Copy(s, cpu0, cpu1);
  REQUIRE(to_cpu1.ok());
  CHECK(to_cpu1->BitwiseEqual(s));
}

TEST_CASE("A string tensor is fed, crosses CPU devices, and is fetched",
          "[core][string][session]") {
  Graph g;
  Scope root = Scope::Root(&g);
  Output names = ops::Placeholder(root.WithOpName("names").WithDevice("/cpu:0"), DT_STRING, {-1});
  Output copied = ops::Identity(root.WithOpName("copied").WithDevice("/cpu:1"), names);
  Output fixed = ops::Const(root.WithOpName("fixed"), Tensor::FromVector<std::string>({"k"}));
  Output raw_in = ops::Placeholder(root.WithOpName("raw"), DT_UINT8, {2});
  Output bytes = ops::Identity(root.WithOpName("bytes"), raw_in);
  SessionOptions opts;
  opts.device_count["CPU"] = 2;
  Session sess(g, opts);
  Tensor fed = Tensor::FromVector<std::string>({"alpha", std::string(100, 'b'), ""});
  Tensor raw = Tensor::FromVector<uint8_t>({7, 200});
  std::vector<Tensor> out = sess.Run({{names, fed}, {raw_in, raw}}, {copied, fixed, bytes});
  REQUIRE(out.size() == 3);
  CHECK(out[0].BitwiseEqual(fed));
  CHECK(out[1].ToVector<std::string>() == std::vector<std::string>{"k"});
  CHECK(out[2].ToVector<uint8_t>() == std::vector<uint8_t>{7, 200});
  CHECK(sess.DevicePlacement().at("copied") == "/job:localhost/replica:0/task:0/device:CPU:1");
}

}  // namespace
}  // namespace pf::tensor_test
