#pragma once
// A set of time intervals [start, end) on one clock: add() gathers, normalize() sorts and
// merges overlapping or touching intervals into disjoint ones, and then union, difference
// and the measure of the set within a window are exact (no sampling).
//
// Call order: add()... -> normalize() -> united / minus / measure. Thread-safety: none.

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace cudascope::analysis {

class IntervalSet {
 public:
  void add(std::int64_t start, std::int64_t end) {
    if (end > start) spans_.emplace_back(start, end);
  }

  void normalize() {
    std::sort(spans_.begin(), spans_.end());
    std::size_t out = 0;
    for (const auto& span : spans_) {
      if (out > 0 && span.first <= spans_[out - 1].second) {
        spans_[out - 1].second = std::max(spans_[out - 1].second, span.second);
      } else {
        spans_[out++] = span;
      }
    }
    spans_.resize(out);
  }

  // The union of normalized sets.
  static IntervalSet united(std::initializer_list<const IntervalSet*> sets) {
    IntervalSet all;
    for (const IntervalSet* set : sets) all.spans_.insert(all.spans_.end(), set->spans_.begin(), set->spans_.end());
    all.normalize();
    return all;
  }

  // This set without `other` (both normalized): the parts of these intervals `other` does not cover.
  IntervalSet minus(const IntervalSet& other) const {
    IntervalSet out;
    std::size_t j = 0;
    for (auto [start, end] : spans_) {
      while (j < other.spans_.size() && other.spans_[j].second <= start) ++j;
      for (std::size_t k = j; k < other.spans_.size() && other.spans_[k].first < end; ++k) {
        if (other.spans_[k].first > start) out.spans_.emplace_back(start, other.spans_[k].first);
        start = std::max(start, other.spans_[k].second);
        if (start >= end) break;
      }
      if (start < end) out.spans_.emplace_back(start, end);
    }
    return out;
  }

  // Total length of the set within [start, end).
  std::int64_t measure(std::int64_t start, std::int64_t end) const {
    auto it = std::upper_bound(spans_.begin(), spans_.end(), start,
                               [](std::int64_t t, const std::pair<std::int64_t, std::int64_t>& s) { return t < s.second; });
    std::int64_t total = 0;
    for (; it != spans_.end() && it->first < end; ++it) total += std::min(end, it->second) - std::max(start, it->first);
    return total;
  }

  bool empty() const noexcept { return spans_.empty(); }
  std::int64_t front_start() const { return spans_.front().first; }
  std::int64_t back_end() const { return spans_.back().second; }
  const std::vector<std::pair<std::int64_t, std::int64_t>>& spans() const noexcept { return spans_; }

 private:
  std::vector<std::pair<std::int64_t, std::int64_t>> spans_;
};

}  // namespace cudascope::analysis
