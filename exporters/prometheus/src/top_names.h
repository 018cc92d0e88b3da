#pragma once
// Series keyed by names with a bounded count (see profile_metrics.h, "Cardinality"): each
// key accumulates a Value; at each render the keys ranked highest take free slots (at most
// `slots`, never given back) and a key's own series counts from the moment it took its slot;
// the rest of everything is summed per group into "other". So counters never decrease and
// the sum over every series is the sum of everything added.
//
// Value needs +=, -= and a `rank()` (what "top" means). Not thread-safe.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace cudascope::metrics::detail {

template <typename Key, typename Value, typename Hash = std::hash<Key>>
class TopNames {
 public:
  TopNames(std::size_t slots, std::size_t max_tracked) : slots_(slots), max_tracked_(max_tracked) {}

  // `group` is the "other" series the amount belongs to when the key has none of its own.
  void add(const Key& key, std::int64_t group, const Value& amount) {
    auto found = entries_.find(key);
    if (found == entries_.end()) {
      if (entries_.size() >= max_tracked_) {
        overflow_[group] += amount;
        return;
      }
      found = entries_.emplace(key, Entry{group, {}, {}, false}).first;
    }
    found->second.total += amount;
  }

  // Calls own(key, value) for each key with a series and other(group, value) for each
  // group's remainder.
  template <typename Own, typename Other>
  void render(Own own, Other other) {
    promote();
    std::map<std::int64_t, Value> rest = overflow_;
    for (auto& [key, e] : entries_) {
      if (e.promoted) {
        Value mine = e.total;
        mine -= e.base;
        own(key, mine);
        rest[e.group] += e.base;
      } else {
        rest[e.group] += e.total;
      }
    }
    for (auto& [group, value] : rest) other(group, value);
  }

 private:
  struct Entry {
    std::int64_t group;
    Value total;
    Value base;  // counted into "other" before the key took its slot
    bool promoted;
  };

  void promote() {
    if (promoted_ >= slots_) return;
    std::vector<typename std::unordered_map<Key, Entry, Hash>::iterator> candidates;
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (!it->second.promoted) candidates.push_back(it);
    }
    const std::size_t take = std::min(slots_ - promoted_, candidates.size());
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(take), candidates.end(),
                      [](const auto& a, const auto& b) { return a->second.total.rank() > b->second.total.rank(); });
    for (std::size_t i = 0; i < take; ++i) {
      Entry& e = candidates[i]->second;
      e.promoted = true;
      // Nothing was exposed before the first render: the first slots get their whole count.
      if (rendered_) e.base = e.total;
      ++promoted_;
    }
    rendered_ = true;
  }

  std::size_t slots_;
  std::size_t max_tracked_;
  std::size_t promoted_ = 0;
  bool rendered_ = false;
  std::unordered_map<Key, Entry, Hash> entries_;
  std::map<std::int64_t, Value> overflow_;
};

}  // namespace cudascope::metrics::detail
