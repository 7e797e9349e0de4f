// Device names: whatever Parse accepts prints (ToString) as a name that parses back to the same
// fields, and the merge rules keep their contracts. The input is one name, or two separated by
// a NUL byte (the second exercises Merge, MergeOverride and the specification checks).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "placeflow/core/device_name.h"

namespace {

// A mismatch is a bug as real as a sanitizer report: stop so libFuzzer keeps the input.
void Check(bool ok) {
  if (!ok) __builtin_trap();
}

void CheckRoundTrip(const pf::DeviceName& d) {
  const std::string printed = d.ToString();
  pf::DeviceName again;
  Check(pf::DeviceName::Parse(printed, &again));
  Check(again == d);
  Check(again.ToString() == printed);
  Check(pf::DeviceName::IsSpecification(d, d));
  if (d.IsFullySpecified()) {
    Check(printed == pf::DeviceName::FullName(d.job, d.replica, d.task, d.type, d.id));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  std::string_view first = input.substr(0, nul);
  pf::DeviceName a;
  const bool parsed = pf::DeviceName::Parse(first, &a);
  Check(pf::DeviceName::ParseOrError(first).ok() == parsed);
  if (!parsed) {
    Check(a.IsEmpty());  // a failed parse leaves the empty name
    return 0;
  }
  CheckRoundTrip(a);
  if (nul == std::string_view::npos) return 0;

  pf::DeviceName b;
  if (!pf::DeviceName::Parse(input.substr(nul + 1), &b)) return 0;
  CheckRoundTrip(b);
  Check(pf::DeviceName::AreCompatible(a, b) == pf::DeviceName::AreCompatible(b, a));

  pf::DeviceName over = a;
  pf::DeviceName::MergeOverride(&over, b);
  Check(pf::DeviceName::IsSpecification(b, over));  // the inner scope's fields win
  CheckRoundTrip(over);

  pf::DeviceName unset = a;
  pf::DeviceName::MergeUnset(&unset, b);
  Check(pf::DeviceName::IsSpecification(a, unset));  // set fields stay
  CheckRoundTrip(unset);

  pf::DeviceName merged = a;
  const bool merge_ok = pf::DeviceName::Merge(&merged, b).ok();
  Check(merge_ok == pf::DeviceName::AreCompatible(a, b));
  if (merge_ok) {
    Check(pf::DeviceName::IsSpecification(a, merged) && pf::DeviceName::IsSpecification(b, merged));
  }
  CheckRoundTrip(merged);
  pf::DeviceName soft = a;
  Check(pf::DeviceName::Merge(&soft, b, /*allow_soft_placement=*/true).ok() ==
            (a.job == b.job || !a.has_job || !b.has_job) &&
        (a.replica == b.replica || !a.has_replica || !b.has_replica) &&
        (a.task == b.task || !a.has_task || !b.has_task));
  CheckRoundTrip(soft);
  return 0;
}
