// Device names: whatever Parse accepts prints (ToString) as a name that parses back to the same
// fields, and the merge rules keep their contracts. The input is one name, or two separated by
// a NUL byte (the second exercises Merge, MergeOverride and the specification checks).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "placeflow/core/device_name.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void CheckRoundTrip(const pf::DeviceName& d) {
  const std::string printed = d.ToString();
  pf::DeviceName again;
  CHECK(pf::DeviceName::Parse(printed, &again));
  CHECK(again == d);
  CHECK(again.ToString() == printed);
  CHECK(pf::DeviceName::IsSpecification(d, d));
  if (d.IsFullySpecified()) {
    CHECK(printed == pf::DeviceName::FullName(d.job, d.replica, d.task, d.type, d.id));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  std::string_view first = input.substr(0, nul);
  pf::DeviceName a;
  const bool parsed = pf::DeviceName::Parse(first, &a);
  CHECK(pf::DeviceName::TryParse(first).ok() == parsed);
  if (!parsed) {
    CHECK(a.IsEmpty());  // a failed parse leaves the empty name
    return 0;
  }
  CheckRoundTrip(a);
  if (nul == std::string_view::npos) return 0;

  pf::DeviceName b;
  if (!pf::DeviceName::Parse(input.substr(nul + 1), &b)) return 0;
  CheckRoundTrip(b);
  CHECK(pf::DeviceName::AreCompatible(a, b) == pf::DeviceName::AreCompatible(b, a));

  pf::DeviceName over = a;
  pf::DeviceName::MergeOverride(&over, b);
  CHECK(pf::DeviceName::IsSpecification(b, over));  // the inner scope's fields win
  CheckRoundTrip(over);

  pf::DeviceName unset = a;
  pf::DeviceName::MergeUnset(&unset, b);
  CHECK(pf::DeviceName::IsSpecification(a, unset));  // set fields stay
  CheckRoundTrip(unset);

  pf::DeviceName merged = a;
  const bool merge_ok = pf::DeviceName::Merge(&merged, b).ok();
  CHECK(merge_ok == pf::DeviceName::AreCompatible(a, b));
  if (merge_ok) {
    CHECK(pf::DeviceName::IsSpecification(a, merged) && pf::DeviceName::IsSpecification(b, merged));
  }
  CheckRoundTrip(merged);
  pf::DeviceName soft = a;
  const bool soft_ok = pf::DeviceName::Merge(&soft, b, /*allow_soft_placement=*/true).ok();
  CHECK(soft_ok == ((a.job == b.job || !a.has_job || !b.has_job) &&
                    (a.replica == b.replica || !a.has_replica || !b.has_replica) &&
                    (a.task == b.task || !a.has_task || !b.has_task)));
  CheckRoundTrip(soft);
  return 0;
}
