// LocalRendezvous through the Rendezvous interface _Send/_Recv kernels see: either order of
// Send and Recv, duplicate sends and receives, the value let go once received, and aborts that
// wake every waiting Recv.
#include "placeflow/executor/rendezvous.h"

#include <future>
#include <thread>

#include "tests/testing/test_util.h"

namespace pf::rendezvous_test {
namespace {

using Catch::Matchers::Contains;

// What one RecvAsync callback saw; `calls` counts deliveries (exactly one is expected).
struct Received {
  int calls = 0;
  Status status;
  Tensor value;
  std::thread::id thread;
  Rendezvous::DoneCallback Callback() {
    return [this](const Status& s, const Tensor& t) {
      ++calls;
      status = s;
      value = t;
      thread = std::this_thread::get_id();
    };
  }
};

TEST_CASE("Rendezvous keys name both devices, the sender's incarnation and the tensor",
          "[executor][rendezvous]") {
  CHECK(Rendezvous::Key("/cpu:0", "/cpu:1", "a:0") == "/cpu:0;0000000000000000;/cpu:1;a:0");
  const std::string key = Rendezvous::Key("/cpu:0", 0xfedcba9876543210, "/cpu:1", "a:0;host");
  CHECK(key == "/cpu:0;fedcba9876543210;/cpu:1;a:0;host");
  CHECK(Rendezvous::SendDevice(key) == "/cpu:0");
  CHECK(Rendezvous::SendIncarnation(key) == 0xfedcba9876543210);
  CHECK(Rendezvous::SendIncarnation("no separators") == 0);
}

TEST_CASE("Rendezvous: a Send before the Recv delivers at once", "[executor][rendezvous]") {
  LocalRendezvous local;
  Rendezvous* r = &local;
  Tensor t = Tensor::FromVector<float>({1, 2}, {2});
  REQUIRE(r->Send("k", t).ok());
  Received got;
  r->RecvAsync("k", got.Callback());
  CHECK(got.calls == 1);
  CHECK(got.status.ok());
  CHECK(got.value.SharesBufferWith(t));  // in process: no copy
  // The rendezvous let go of it: the buffer lives as long as its readers (t and got.value).
  CHECK(t.buffer().use_count() == 2);
  // A key is received once a step.
  Received again;
  r->RecvAsync("k", again.Callback());
  CHECK(again.calls == 1);
  CHECK(again.status.code() == Code::kInternal);
  CHECK_THAT(again.status.message(), Contains("Recv of 'k' twice in one step"));
  CHECK_FALSE(again.value.IsInitialized());
}

TEST_CASE("Rendezvous: a sent value waiting for its Recv is held by the rendezvous alone",
          "[executor][rendezvous]") {
  LocalRendezvous r;
  {
    Tensor t = Tensor::Scalar<float>(5);
    REQUIRE(r.Send("k", t).ok());
    CHECK(t.buffer().use_count() == 2);
  }
  Received got;
  r.RecvAsync("k", got.Callback());
  REQUIRE(got.status.ok());
  CHECK(got.value.data<float>()[0] == 5.f);
  CHECK(got.value.buffer().use_count() == 1);  // freed with its reader, not at the step's end
}

TEST_CASE("Rendezvous: a Recv before the Send waits and the Send completes it",
          "[executor][rendezvous]") {
  LocalRendezvous r;
  Received first, second, other_key;
  r.RecvAsync("k", first.Callback());
  r.RecvAsync("k", second.Callback());
  r.RecvAsync("other", other_key.Callback());
  CHECK(first.calls == 0);
  // A second Recv of a key fails at once, even while the first waits.
  CHECK(second.calls == 1);
  CHECK_THAT(second.status.message(), Contains("Recv of 'k' twice in one step"));
  Tensor t = Tensor::Scalar<float>(3);
  REQUIRE(r.Send("k", t).ok());
  // The waiter ran, on the sending thread; a different key still waits.
  CHECK(first.calls == 1);
  CHECK(second.calls == 1);
  CHECK(first.status.ok());
  CHECK(first.value.SharesBufferWith(t));
  CHECK(t.buffer().use_count() == 2);  // t and the waiter's copy: the rendezvous kept none
  CHECK(first.thread == std::this_thread::get_id());
  CHECK(other_key.calls == 0);
}

TEST_CASE("Rendezvous: Send and Recv meet across threads", "[executor][rendezvous]") {
  LocalRendezvous r;
  std::promise<float> value;
  std::future<float> got = value.get_future();
  r.RecvAsync("k", [&](const Status& s, const Tensor& t) {
    value.set_value(s.ok() ? t.data<float>()[0] : -1.f);
  });
  // The result is checked on this thread: Catch2's assertions are not thread-safe (TSan).
  Status sent;
  std::thread sender([&] { sent = r.Send("k", Tensor::Scalar<float>(7)); });
  REQUIRE(got.wait_for(std::chrono::seconds(30)) == std::future_status::ready);
  sender.join();
  CHECK(sent.ok());
  CHECK(got.get() == 7.f);
}

TEST_CASE("Rendezvous: a second Send of a key fails and delivers nothing more",
          "[executor][rendezvous]") {
  LocalRendezvous r;
  Tensor first = Tensor::Scalar<float>(1);
  REQUIRE(r.Send("k", first).ok());
  Status dup = r.Send("k", Tensor::Scalar<float>(2));
  CHECK(dup.code() == Code::kInternal);
  CHECK_THAT(dup.message(), Contains("Send of 'k' twice in one step"));
  Received got;
  r.RecvAsync("k", got.Callback());
  CHECK(got.value.SharesBufferWith(first));
}

TEST_CASE("Rendezvous: an abort wakes waiting Recvs with its error and fails later calls",
          "[executor][rendezvous]") {
  LocalRendezvous r;
  Received waiting;
  r.RecvAsync("k", waiting.Callback());
  r.StartAbort(errors::Internal("boom"));
  CHECK(waiting.calls == 1);
  CHECK(waiting.status.code() == Code::kInternal);
  CHECK(waiting.status.message() == "boom");
  CHECK_FALSE(waiting.value.IsInitialized());
  // Later Recvs fail at once (even of a key never sent), and so do Sends.
  Received later;
  r.RecvAsync("never_sent", later.Callback());
  CHECK(later.calls == 1);
  CHECK(later.status.message() == "boom");
  CHECK(r.Send("k", Tensor::Scalar<float>(1)).message() == "boom");
  // The first abort wins.
  r.StartAbort(errors::Cancelled("second"));
  Received last;
  r.RecvAsync("k", last.Callback());
  CHECK(last.status.message() == "boom");
  CHECK(waiting.calls == 1);  // not woken twice
}

TEST_CASE("Rendezvous: an abort with an OK status still fails the waiters",
          "[executor][rendezvous]") {
  LocalRendezvous r;
  Received waiting;
  r.RecvAsync("k", waiting.Callback());
  r.StartAbort(Status::OK());
  REQUIRE(waiting.calls == 1);
  CHECK(waiting.status.code() == Code::kAborted);
  CHECK_FALSE(r.Send("k", Tensor::Scalar<float>(1)).ok());
}

}  // namespace
}  // namespace pf::rendezvous_test
