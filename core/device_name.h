// Device names parsed, matched and merged the way TensorFlow's DeviceNameUtils does.
//
//   pf::DeviceName d;
//   pf::DeviceName::Parse("/job:localhost/replica:0/task:0/device:GPU:1", &d);  // true
//   pf::DeviceName::Parse("/gpu:1", &d);          // legacy form: type GPU, id 1
//   d.ToString() == "/device:GPU:1";              // canonical: only the fields that are set
//   pf::DeviceName::MergeOverride(&outer, inner); // tf.device nesting: inner fields win
//
// Grammar: any order and subset of "/job:NAME", "/replica:N", "/task:N", "/device:TYPE[:N]",
// legacy "/cpu:N" and "/gpu:N"; "*" in place of a value leaves that field unset.
#pragma once

#include <string>
#include <string_view>

#include "placeflow/core/status.h"

namespace pf {

struct DeviceName {
  bool has_job = false;
  std::string job;
  bool has_replica = false;
  int replica = 0;
  bool has_task = false;
  int task = 0;
  bool has_type = false;
  std::string type;
  bool has_id = false;
  int id = 0;

  // Returns false for malformed strings; "" and "/" parse to the empty name.
  static bool Parse(std::string_view text, DeviceName* out);
  // Parse with the error users see: "Malformed device specification '/foo:bar'".
  static StatusOr<DeviceName> TryParse(std::string_view text);
  // The canonical full name "/job:J/replica:R/task:T/device:TYPE:ID".
  static std::string FullName(std::string_view job, int replica, int task, std::string_view type,
                              int id);

  std::string ToString() const;
  bool IsFullySpecified() const { return has_job && has_replica && has_task && has_type && has_id; }
  bool IsEmpty() const { return !has_job && !has_replica && !has_task && !has_type && !has_id; }
  // "CPU:0": the local part.
  std::string LocalName() const;

  // True when every field set in `less_specific` is set to the same value in `more_specific`.
  static bool IsSpecification(const DeviceName& less_specific, const DeviceName& more_specific);
  // True when the fully specified `name` matches every field set in `pattern`.
  static bool IsCompleteSpecification(const DeviceName& pattern, const DeviceName& name);
  // True when no field is set to different values in the two names.
  static bool AreCompatible(const DeviceName& a, const DeviceName& b);
  // Fills `target` with the fields of `other`. Conflicting job/replica/task are errors; a
  // conflicting type or id is an error unless `allow_soft_placement`, which then clears it.
  static Status Merge(DeviceName* target, const DeviceName& other,
                      bool allow_soft_placement = false);
  // Fields set in `other` replace those in `target` (nested device scopes).
  static void MergeOverride(DeviceName* target, const DeviceName& other);
  // Fields set in `other` fill only the fields unset in `target`.
  static void MergeUnset(DeviceName* target, const DeviceName& other);

  bool operator==(const DeviceName& o) const;
};

}  // namespace pf
