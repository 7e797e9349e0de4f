#include "placeflow/core/device_name.h"

#include <cctype>

namespace pf {
namespace {

bool ConsumePrefix(std::string_view* s, std::string_view prefix) {
  if (s->substr(0, prefix.size()) != prefix) return false;
  s->remove_prefix(prefix.size());
  return true;
}

// [A-Za-z][A-Za-z0-9_]*: TensorFlow's rule for job names ("/job:Worker_1") and device types.
bool ConsumeName(std::string_view* s, std::string* out) {
  if (s->empty() || !std::isalpha(static_cast<unsigned char>((*s)[0]))) return false;
  size_t n = 1;
  while (n < s->size()) {
    char c = (*s)[n];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) break;
    ++n;
  }
  *out = std::string(s->substr(0, n));
  s->remove_prefix(n);
  return true;
}

bool ConsumeNumber(std::string_view* s, int* out) {
  size_t n = 0;
  long long v = 0;
  while (n < s->size() && std::isdigit(static_cast<unsigned char>((*s)[n]))) {
    v = v * 10 + ((*s)[n] - '0');
    if (v > 1'000'000'000) return false;
    ++n;
  }
  if (n == 0) return false;
  *out = static_cast<int>(v);
  s->remove_prefix(n);
  return true;
}

// "/field:" followed by "*" (unset) or a value read by `consume`.
template <typename T, typename Consume>
bool ParseField(std::string_view* s, std::string_view prefix, bool* has, T* value, Consume consume,
                bool* progress, bool* ok) {
  if (!ConsumePrefix(s, prefix)) return false;
  *progress = true;
  *has = !ConsumePrefix(s, "*");
  if (*has && !consume(s, value)) *ok = false;
  return true;
}

}  // namespace

bool DeviceName::Parse(std::string_view text, DeviceName* out) {
  *out = DeviceName();
  if (text == "/") return true;
  std::string_view s = text;
  bool ok = true;
  while (!s.empty() && ok) {
    bool progress = false;
    ParseField(&s, "/job:", &out->has_job, &out->job, ConsumeName, &progress, &ok);
    if (ok)
      ParseField(&s, "/replica:", &out->has_replica, &out->replica, ConsumeNumber, &progress, &ok);
    if (ok) ParseField(&s, "/task:", &out->has_task, &out->task, ConsumeNumber, &progress, &ok);
    if (ok && ParseField(&s, "/device:", &out->has_type, &out->type, ConsumeName, &progress, &ok) &&
        ok) {
      if (ConsumePrefix(&s, ":")) {
        out->has_id = !ConsumePrefix(&s, "*");
        if (out->has_id && !ConsumeNumber(&s, &out->id)) ok = false;
      } else {
        out->has_id = false;
      }
    }
    // Legacy "/cpu:0" and "/gpu:1" (either case) mean "/device:CPU:0" and "/device:GPU:1".
    for (auto [lower, upper, type] :
         {std::tuple{"/cpu:", "/CPU:", "CPU"}, std::tuple{"/gpu:", "/GPU:", "GPU"}}) {
      if (ok && (ConsumePrefix(&s, lower) || ConsumePrefix(&s, upper))) {
        progress = true;
        out->has_type = true;
        out->type = type;
        out->has_id = !ConsumePrefix(&s, "*");
        if (out->has_id && !ConsumeNumber(&s, &out->id)) ok = false;
      }
    }
    if (!progress) ok = false;
  }
  if (!ok) *out = DeviceName();
  return ok;
}

StatusOr<DeviceName> DeviceName::TryParse(std::string_view text) {
  DeviceName d;
  if (!Parse(text, &d))
    return errors::InvalidArgument("Malformed device specification '", text, "'");
  return d;
}

std::string DeviceName::FullName(std::string_view job, int replica, int task, std::string_view type,
                                 int id) {
  return fmt::format("/job:{}/replica:{}/task:{}/device:{}:{}", job, replica, task, type, id);
}

std::string DeviceName::ToString() const {
  std::string s;
  if (has_job) s += "/job:" + job;
  if (has_replica) s += "/replica:" + std::to_string(replica);
  if (has_task) s += "/task:" + std::to_string(task);
  // TensorFlow's form: a wildcard stands in for whichever of type and id is unset.
  if (has_type || has_id) {
    s += "/device:" + (has_type ? type : std::string("*")) + ":" +
         (has_id ? std::to_string(id) : std::string("*"));
  }
  return s;
}

std::string DeviceName::LocalName() const {
  return (has_type ? type : std::string("*")) + ":" +
         (has_id ? std::to_string(id) : std::string("*"));
}

bool DeviceName::IsSpecification(const DeviceName& less, const DeviceName& more) {
  if (less.has_job && (!more.has_job || less.job != more.job)) return false;
  if (less.has_replica && (!more.has_replica || less.replica != more.replica)) return false;
  if (less.has_task && (!more.has_task || less.task != more.task)) return false;
  if (less.has_type && (!more.has_type || less.type != more.type)) return false;
  if (less.has_id && (!more.has_id || less.id != more.id)) return false;
  return true;
}

bool DeviceName::IsCompleteSpecification(const DeviceName& pattern, const DeviceName& name) {
  return name.IsFullySpecified() && IsSpecification(pattern, name);
}

bool DeviceName::AreCompatible(const DeviceName& a, const DeviceName& b) {
  if (a.has_job && b.has_job && a.job != b.job) return false;
  if (a.has_replica && b.has_replica && a.replica != b.replica) return false;
  if (a.has_task && b.has_task && a.task != b.task) return false;
  if (a.has_type && b.has_type && a.type != b.type) return false;
  if (a.has_id && b.has_id && a.id != b.id) return false;
  return true;
}

Status DeviceName::Merge(DeviceName* target, const DeviceName& other, bool allow_soft_placement) {
  auto conflict = [&](std::string_view what) {
    return errors::InvalidArgument("Cannot merge devices with incompatible ", what, ": '",
                                   target->ToString(), "' and '", other.ToString(), "'");
  };
  if (other.has_job) {
    if (target->has_job && target->job != other.job) return conflict("jobs");
    target->has_job = true;
    target->job = other.job;
  }
  if (other.has_replica) {
    if (target->has_replica && target->replica != other.replica) return conflict("replicas");
    target->has_replica = true;
    target->replica = other.replica;
  }
  if (other.has_task) {
    if (target->has_task && target->task != other.task) return conflict("tasks");
    target->has_task = true;
    target->task = other.task;
  }
  if (other.has_type) {
    if (target->has_type && target->type != other.type) {
      if (!allow_soft_placement) return conflict("types");
      target->has_type = false;
      target->has_id = false;
      return Status::OK();
    }
    target->has_type = true;
    target->type = other.type;
  }
  if (other.has_id) {
    if (target->has_id && target->id != other.id) {
      if (!allow_soft_placement) return conflict("ids");
      target->has_id = false;
      return Status::OK();
    }
    target->has_id = true;
    target->id = other.id;
  }
  return Status::OK();
}

void DeviceName::MergeOverride(DeviceName* target, const DeviceName& other) {
  if (other.has_job) {
    target->has_job = true;
    target->job = other.job;
  }
  if (other.has_replica) {
    target->has_replica = true;
    target->replica = other.replica;
  }
  if (other.has_task) {
    target->has_task = true;
    target->task = other.task;
  }
  if (other.has_type) {
    target->has_type = true;
    target->type = other.type;
  }
  if (other.has_id) {
    target->has_id = true;
    target->id = other.id;
  }
}

void DeviceName::MergeUnset(DeviceName* target, const DeviceName& other) {
  if (other.has_job && !target->has_job) {
    target->has_job = true;
    target->job = other.job;
  }
  if (other.has_replica && !target->has_replica) {
    target->has_replica = true;
    target->replica = other.replica;
  }
  if (other.has_task && !target->has_task) {
    target->has_task = true;
    target->task = other.task;
  }
  if (other.has_type && !target->has_type) {
    target->has_type = true;
    target->type = other.type;
  }
  if (other.has_id && !target->has_id) {
    target->has_id = true;
    target->id = other.id;
  }
}

bool DeviceName::operator==(const DeviceName& o) const {
  return has_job == o.has_job && (!has_job || job == o.job) && has_replica == o.has_replica &&
         (!has_replica || replica == o.replica) && has_task == o.has_task &&
         (!has_task || task == o.task) && has_type == o.has_type && (!has_type || type == o.type) &&
         has_id == o.has_id && (!has_id || id == o.id);
}

}  // namespace pf
