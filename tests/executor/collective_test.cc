// LocalCollectiveTable through the CollectiveTable interface collective kernels see: the last
// participant completes the collective for all, membership errors fail only the participant
// that made them, and an abort wakes every waiting participant.
#include "placeflow/executor/collective.h"

#include <future>
#include <thread>

#include "tests/testing/test_util.h"

namespace pf::collective_test {
namespace {

using Catch::Matchers::Contains;
using Participant = CollectiveTable::Participant;

// What each participant's `done` saw, by slot (the rank unless a test says otherwise).
struct Results {
  std::vector<int> calls;
  std::vector<Status> status;
  explicit Results(int n) : calls(n, 0), status(n) {}
  Participant Make(int rank, int slot) {
    return {rank, nullptr, [this, slot](Status s) {
              ++calls[slot];
              status[slot] = std::move(s);
            }};
  }
  Participant Make(int rank) { return Make(rank, rank); }
};

// A completion that records how often it ran, with which ranks, on which thread.
struct Completion {
  int runs = 0;
  std::vector<int> ranks;
  std::thread::id thread;
  Status result;
  CollectiveTable::CompleteFn Fn() {
    return [this](std::vector<Participant>& all) {
      ++runs;
      ranks.clear();
      for (const Participant& p : all) ranks.push_back(p.rank);
      thread = std::this_thread::get_id();
      return result;
    };
  }
};

TEST_CASE("Collectives: the last arriver completes once, with participants in rank order",
          "[executor][collectives]") {
  LocalCollectiveTable local;
  CollectiveTable* table = &local;
  Results r(3);
  Completion c;
  table->Join("grads", 3, r.Make(2), c.Fn());
  table->Join("grads", 3, r.Make(0), c.Fn());
  CHECK(c.runs == 0);
  CHECK(r.calls == std::vector<int>{0, 0, 0});
  // The last participant arrives on another thread: the completion and every `done` run there.
  std::thread::id last_thread;
  std::thread last([&] {
    last_thread = std::this_thread::get_id();
    table->Join("grads", 3, r.Make(1), c.Fn());
  });
  last.join();
  CHECK(c.runs == 1);
  CHECK(c.ranks == std::vector<int>{0, 1, 2});
  CHECK(c.thread == last_thread);
  CHECK(r.calls == std::vector<int>{1, 1, 1});
  for (const Status& s : r.status) CHECK(s.ok());
}

TEST_CASE("Collectives: the completion's error reaches every participant",
          "[executor][collectives]") {
  LocalCollectiveTable table;
  Results r(2);
  Completion c;
  c.result = errors::InvalidArgument("shapes differ");
  table.Join("grads", 2, r.Make(0), c.Fn());
  table.Join("grads", 2, r.Make(1), c.Fn());
  CHECK(c.runs == 1);
  for (const Status& s : r.status) CHECK(s.message() == "shapes differ");
}

TEST_CASE("Collectives: groups with different keys do not meet", "[executor][collectives]") {
  LocalCollectiveTable table;
  Results r(2);
  Completion a, b;
  table.Join("a", 2, r.Make(0, 0), a.Fn());
  table.Join("b", 2, r.Make(1, 1), b.Fn());
  CHECK(a.runs == 0);
  CHECK(b.runs == 0);
  CHECK(r.calls == std::vector<int>{0, 0});
}

TEST_CASE("Collectives: a group size mismatch fails only the participant that disagrees",
          "[executor][collectives]") {
  LocalCollectiveTable table;
  Results r(3);
  Completion c;
  table.Join("grads", 2, r.Make(0, 0), c.Fn());
  table.Join("grads", 3, r.Make(1, 1), c.Fn());
  CHECK(r.calls == std::vector<int>{0, 1, 0});
  CHECK(r.status[1].code() == Code::kInvalidArgument);
  CHECK_THAT(r.status[1].message(),
             Contains("Collective 'grads': a participant expects 3 participants, another 2"));
  // The group still completes with a participant that agrees.
  table.Join("grads", 2, r.Make(1, 2), c.Fn());
  CHECK(c.runs == 1);
  CHECK(r.calls == std::vector<int>{1, 1, 1});
  CHECK(r.status[0].ok());
  CHECK(r.status[2].ok());
}

TEST_CASE("Collectives: a rank out of range or taken fails that participant",
          "[executor][collectives]") {
  LocalCollectiveTable table;
  Results r(4);
  Completion c;
  table.Join("grads", 2, r.Make(2, 0), c.Fn());
  CHECK(r.calls[0] == 1);
  CHECK_THAT(r.status[0].message(), Contains("Collective 'grads': rank 2 is not in [0, 2)"));
  table.Join("grads", 2, r.Make(-1, 1), c.Fn());
  CHECK_THAT(r.status[1].message(), Contains("rank -1 is not in [0, 2)"));
  table.Join("grads", 2, r.Make(0, 2), c.Fn());
  table.Join("grads", 2, r.Make(0, 3), c.Fn());
  CHECK(r.calls[3] == 1);
  CHECK(r.status[3].code() == Code::kInvalidArgument);
  CHECK_THAT(r.status[3].message(), Contains("Collective 'grads': two participants have rank 0"));
  CHECK(r.calls[2] == 0);  // the first rank 0 still waits for rank 1
  CHECK(c.runs == 0);
}

TEST_CASE("Collectives: an abort wakes waiting participants and fails later ones",
          "[executor][collectives]") {
  LocalCollectiveTable table;
  Results r(3);
  Completion c;
  table.Join("a", 2, r.Make(0, 0), c.Fn());
  table.Join("b", 3, r.Make(2, 1), c.Fn());
  table.StartAbort(errors::Internal("boom"));
  CHECK(r.calls == std::vector<int>{1, 1, 0});
  CHECK(r.status[0].message() == "boom");
  CHECK(r.status[1].message() == "boom");
  // A participant arriving after the abort fails at once; the completion never runs.
  table.Join("a", 2, r.Make(1, 2), c.Fn());
  CHECK(r.calls[2] == 1);
  CHECK(r.status[2].message() == "boom");
  CHECK(c.runs == 0);
  // The first abort wins and nobody is woken twice.
  table.StartAbort(errors::Cancelled("second"));
  CHECK(r.calls == std::vector<int>{1, 1, 1});
}

TEST_CASE("Collectives: an abort with an OK status still fails the participants",
          "[executor][collectives]") {
  LocalCollectiveTable table;
  Results r(1);
  Completion c;
  table.Join("a", 2, r.Make(0), c.Fn());
  table.StartAbort(Status::OK());
  REQUIRE(r.calls[0] == 1);
  CHECK(r.status[0].code() == Code::kAborted);
}

TEST_CASE("Collectives: participants on many threads all complete", "[executor][collectives]") {
  constexpr int kN = 8;
  LocalCollectiveTable table;
  std::atomic<int> runs{0};
  std::vector<std::promise<Status>> done(kN);
  std::vector<std::thread> threads;
  for (int i = 0; i < kN; ++i) {
    threads.emplace_back([&, i] {
      table.Join("grads", kN, {i, nullptr, [&, i](Status s) { done[i].set_value(s); }},
                 [&](std::vector<Participant>& all) {
                   ++runs;
                   return static_cast<int>(all.size()) == kN
                              ? Status::OK()
                              : errors::Internal("completed with ", all.size());
                 });
    });
  }
  // Join never blocks, so once every thread is back every participant has been answered.
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kN; ++i) {
    std::future<Status> f = done[i].get_future();
    REQUIRE(f.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
    CHECK(f.get().ok());
  }
  CHECK(runs == 1);
}

}  // namespace
}  // namespace pf::collective_test
