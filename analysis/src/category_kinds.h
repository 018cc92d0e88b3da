#pragma once
// The kind of each event's category (event_kind.h), read once per category: a trace has few
// categories and many events, in runs of one category, so the last category's kind is kept at
// hand and the others in a table. Trace statistics and collective pairing, which ask for every
// event of a trace, read categories through it.
//
// Not thread-safe: one per pass over a model.

#include <cudascope/analysis/event_kind.h>
#include <cudascope/analysis/trace_model.h>

#include <cstdint>
#include <unordered_map>

namespace cudascope::analysis::detail {

class CategoryKinds {
 public:
  explicit CategoryKinds(const TraceModel& model) : model_(model) {}

  EventKind operator()(const TraceModel::Event& e) {
    if (e.cat == last_cat_) return last_kind_;
    const auto [it, added] = kinds_.try_emplace(e.cat, EventKind::other);
    if (added) it->second = category_kind(model_.cat(e));
    last_cat_ = e.cat;
    last_kind_ = it->second;
    return last_kind_;
  }

 private:
  const TraceModel& model_;
  std::unordered_map<std::uint32_t, EventKind> kinds_;
  std::uint32_t last_cat_ = kNoString;  // an event without a category: ""
  EventKind last_kind_ = category_kind({});
};

}  // namespace cudascope::analysis::detail
