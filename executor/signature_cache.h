// The prepared signatures of a session, least recently used first out: one bound
// (SessionOptions::max_cached_signatures) for the in-process Session and the cluster master.
// Not thread-safe: the sessions call it under their own lock.
//
//   pf::SignatureCache<Prepared> cache(options.max_cached_signatures);
//   if (auto hit = cache.Find(key)) return hit;
//   for (auto& old : cache.Insert(key, prepared)) Release(*old);  // what the bound pushed out
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace pf {

template <typename T>
class SignatureCache {
 public:
  using Entry = std::shared_ptr<const T>;
  // `limit` <= 0: no bound.
  explicit SignatureCache(int limit) : limit_(limit > 0 ? static_cast<size_t>(limit) : 0) {}

  // The entry for `key`, now the most recently used; null when absent.
  Entry Find(const std::string& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    recent_.splice(recent_.begin(), recent_, it->second.recent);
    return it->second.value;
  }
  // Adds (or replaces) `key`; returns the entries the bound evicted, least recently used first.
  // A step still running an evicted signature keeps it alive through its shared_ptr.
  std::vector<Entry> Insert(const std::string& key, Entry value) {
    if (auto it = entries_.find(key); it != entries_.end()) {
      recent_.erase(it->second.recent);
      entries_.erase(it);
    }
    recent_.push_front(key);
    entries_[key] = Slot{std::move(value), recent_.begin()};
    std::vector<Entry> out;
    while (limit_ > 0 && entries_.size() > limit_) {
      auto last = entries_.find(recent_.back());
      out.push_back(std::move(last->second.value));
      entries_.erase(last);
      recent_.pop_back();
      ++evicted_;
    }
    return out;
  }
  // Empties the cache; returns what it held.
  std::vector<Entry> Clear() {
    std::vector<Entry> out;
    for (auto& [key, slot] : entries_) out.push_back(std::move(slot.value));
    entries_.clear();
    recent_.clear();
    return out;
  }
  size_t size() const { return entries_.size(); }
  int64_t evicted() const { return evicted_; }

 private:
  struct Slot {
    Entry value;
    std::list<std::string>::iterator recent;  // its place in recent_
  };
  size_t limit_;
  std::unordered_map<std::string, Slot> entries_;
  std::list<std::string> recent_;  // keys, most recently used first
  int64_t evicted_ = 0;
};

}  // namespace pf
