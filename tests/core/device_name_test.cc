// Reference behaviour: TensorFlow's DeviceNameUtils tests.
#include "tests/testing/test_util.h"

namespace pf::device_name_test {
namespace {

DeviceName P(std::string_view s) {
  DeviceName d;
  REQUIRE(DeviceName::Parse(s, &d));
  return d;
}

TEST_CASE("Device names: full, partial, legacy and wildcard forms parse", "[core][device_name]") {
  DeviceName d = P("/job:worker/replica:1/task:2/device:GPU:3");
  CHECK(d.has_job);
  CHECK(d.job == "worker");
  CHECK(d.replica == 1);
  CHECK(d.task == 2);
  CHECK(d.type == "GPU");
  CHECK(d.id == 3);
  CHECK(d.IsFullySpecified());
  CHECK(d.ToString() == "/job:worker/replica:1/task:2/device:GPU:3");

  CHECK(P("").IsEmpty());
  CHECK(P("/").IsEmpty());
  CHECK(P("/job:localhost").ToString() == "/job:localhost");
  CHECK(P("/gpu:1").ToString() == "/device:GPU:1");
  CHECK(P("/GPU:1").ToString() == "/device:GPU:1");
  CHECK(P("/cpu:0").ToString() == "/device:CPU:0");
  CHECK(P("/CPU:0").type == "CPU");
  CHECK(P("/replica:1/task:2/gpu:3").ToString() == "/replica:1/task:2/device:GPU:3");
  // Any order.
  CHECK(P("/device:GPU:1/job:foo/task:3").ToString() == "/job:foo/task:3/device:GPU:1");
  CHECK(P("/task:3/replica:2/job:foo").ToString() == "/job:foo/replica:2/task:3");
  // Wildcards leave the field unset.
  DeviceName w = P("/job:*/replica:*/task:*/device:GPU:*");
  CHECK_FALSE(w.has_job);
  CHECK_FALSE(w.has_replica);
  CHECK_FALSE(w.has_task);
  CHECK(w.has_type);
  CHECK_FALSE(w.has_id);
  CHECK(w.ToString() == "/device:GPU:*");
  CHECK_FALSE(P("/gpu:*").has_id);
  CHECK(P("/device:GPU").has_type);
  CHECK_FALSE(P("/device:GPU").has_id);
  CHECK(P("/device:XLA_GPU:1").type == "XLA_GPU");
  CHECK(P("/job:foo_bar2").job == "foo_bar2");
  // TensorFlow's job rule: a letter, then letters, digits and '_' (upper case included).
  CHECK(P("/job:Worker_1/task:0").job == "Worker_1");
  CHECK(P("/job:Worker_1/task:0").ToString() == "/job:Worker_1/task:0");
  // A later field of the same kind wins.
  CHECK(P("/gpu:1/cpu:0").ToString() == "/device:CPU:0");
  CHECK(P("/job:a/job:b").job == "b");
}

TEST_CASE("Device names: parse, print and parse again give the same name", "[core][device_name]") {
  // TensorFlow prints a missing type or id as '*' when the other is set.
  DeviceName wild;
  REQUIRE(DeviceName::Parse("/job:*/device:*:3", &wild));
  CHECK(wild.ToString() == "/device:*:3");
  for (const char* text :
       {"", "/job:worker", "/job:Worker_1/replica:2", "/job:ps/replica:0/task:7",
        "/job:ps/replica:0/task:7/device:GPU:3", "/device:CPU:*", "/device:*:3", "/gpu:2", "/cpu:*",
        "/job:*/device:*:3", "/replica:1/task:2", "/task:0/device:XLA_GPU:1",
        "/job:localhost/replica:0/task:0/device:CPU:0", "/job:a/device:GPU:*"}) {
    INFO(text);
    DeviceName first, second;
    REQUIRE(DeviceName::Parse(text, &first));
    const std::string printed = first.ToString();
    INFO(printed);
    REQUIRE(DeviceName::Parse(printed, &second));
    CHECK(second == first);
    CHECK(second.ToString() == printed);
  }
}

TEST_CASE("Device names: malformed strings are rejected clearly", "[core][device_name]") {
  DeviceName d;
  for (const char* bad : {"/foo:bar", "job:foo", "/job:123", "/job:_foo", "/job:1a",
                          "/job:foo/replica:x", "/replica:", "/task:-1", "/device:1:0", "/gpu:a",
                          "/device:GPU:x", "/job:foo/", "//job:foo", "/cpu:0 "}) {
    INFO(bad);
    CHECK_FALSE(DeviceName::Parse(bad, &d));
  }
  auto r = DeviceName::TryParse("/foo:bar");
  CHECK(r.status().code() == Code::kInvalidArgument);
  CHECK(r.status().message() == "Malformed device specification '/foo:bar'");
}

TEST_CASE("Device names: specification matching and compatibility", "[core][device_name]") {
  DeviceName full = P("/job:localhost/replica:0/task:0/device:GPU:1");
  CHECK(DeviceName::IsSpecification(P(""), full));
  CHECK(DeviceName::IsSpecification(P("/gpu:1"), full));
  CHECK(DeviceName::IsSpecification(P("/gpu:*"), full));
  CHECK(DeviceName::IsSpecification(P("/job:localhost"), full));
  CHECK_FALSE(DeviceName::IsSpecification(P("/gpu:0"), full));
  CHECK_FALSE(DeviceName::IsSpecification(P("/cpu:1"), full));
  CHECK_FALSE(DeviceName::IsSpecification(P("/job:worker"), full));
  CHECK_FALSE(
      DeviceName::IsSpecification(full, P("/gpu:1")));  // less specific side has fewer fields
  CHECK(DeviceName::IsCompleteSpecification(P("/device:GPU:1"), full));
  CHECK_FALSE(DeviceName::IsCompleteSpecification(P("/device:GPU:1"), P("/device:GPU:1")));
  CHECK(DeviceName::AreCompatible(P("/job:foo"), P("/gpu:0")));
  CHECK(DeviceName::AreCompatible(P("/job:foo/gpu:0"), P("/job:foo/replica:1")));
  CHECK_FALSE(DeviceName::AreCompatible(P("/gpu:0"), P("/gpu:1")));
  CHECK_FALSE(DeviceName::AreCompatible(P("/gpu:0"), P("/cpu:0")));
  CHECK_FALSE(DeviceName::AreCompatible(P("/job:a"), P("/job:b")));
  CHECK(P("/job:a/gpu:1").LocalName() == "GPU:1");
}

TEST_CASE("Device names: merge with and without soft placement, override merge",
          "[core][device_name]") {
  DeviceName t = P("/job:foo");
  REQUIRE(DeviceName::Merge(&t, P("/gpu:0")).ok());
  CHECK(t.ToString() == "/job:foo/device:GPU:0");
  REQUIRE(DeviceName::Merge(&t, P("/job:foo/replica:1")).ok());
  CHECK(t.ToString() == "/job:foo/replica:1/device:GPU:0");

  DeviceName a = P("/job:foo");
  Status s = DeviceName::Merge(&a, P("/job:bar"));
  CHECK(s.code() == Code::kInvalidArgument);
  CHECK(s.message() == "Cannot merge devices with incompatible jobs: '/job:foo' and '/job:bar'");
  DeviceName r = P("/replica:0");
  CHECK_FALSE(DeviceName::Merge(&r, P("/replica:1")).ok());
  DeviceName k = P("/task:0");
  CHECK_FALSE(DeviceName::Merge(&k, P("/task:1")).ok());

  DeviceName g = P("/gpu:0");
  CHECK(DeviceName::Merge(&g, P("/cpu:0")).message() ==
        "Cannot merge devices with incompatible types: '/device:GPU:0' and '/device:CPU:0'");
  DeviceName g1 = P("/gpu:0");
  CHECK(DeviceName::Merge(&g1, P("/gpu:1")).message() ==
        "Cannot merge devices with incompatible ids: '/device:GPU:0' and '/device:GPU:1'");
  // Soft placement clears the conflicting type (and id), or just the id.
  DeviceName soft = P("/job:foo/gpu:0");
  REQUIRE(DeviceName::Merge(&soft, P("/cpu:0"), /*allow_soft_placement=*/true).ok());
  CHECK(soft.ToString() == "/job:foo");
  DeviceName soft_id = P("/gpu:0");
  REQUIRE(DeviceName::Merge(&soft_id, P("/gpu:1"), true).ok());
  CHECK(soft_id.ToString() == "/device:GPU:*");

  DeviceName o = P("/job:foo/replica:1/gpu:1");
  DeviceName::MergeOverride(&o, P("/job:bar/cpu:0"));
  CHECK(o.ToString() == "/job:bar/replica:1/device:CPU:0");
  DeviceName u = P("/job:foo/gpu:1");
  DeviceName::MergeUnset(&u, P("/job:bar/replica:2/cpu:0"));
  CHECK(u.ToString() == "/job:foo/replica:2/device:GPU:1");
  CHECK(DeviceName::FullName("localhost", 0, 0, "CPU", 1) ==
        "/job:localhost/replica:0/task:0/device:CPU:1");
}

}  // namespace
}  // namespace pf::device_name_test
