#pragma once
// Search by name over every event a timeline shows (slices and instants), substring or
// regular expression, with next/previous in time order.
//
// Names are interned, so a query is matched once per distinct name, never per event; each
// name keeps its events sorted by start (built once), so counting matches is a sum and
// next/previous is a binary search per matching name. A search over ten million events
// costs what matching their few thousand distinct names costs.
//
// UI-free. Build once (any thread); find/next/previous are const and may run concurrently.

#include <cudascope/analysis/trace_model.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace cudascope::analysis {

struct SearchQuery {
  std::string text;
  bool regex = false;           // ECMAScript syntax (std::regex); else a plain substring
  bool case_sensitive = false;
  // When set, decides for each distinct name instead of `text`/`regex`: a caller with a
  // faster engine (the viewer passes Qt's JIT-compiled PCRE2) plugs it in here.
  std::function<bool(std::string_view)> matcher;
};

struct SearchMatches {
  std::vector<std::uint32_t> names;  // matching name ids
  std::uint64_t count = 0;           // events with those names
  std::string error;                 // a bad regular expression: what is wrong; then no names
};

class TimelineSearch {
 public:
  // The model must outlive the search and not change while it is used (rebuild after a
  // follow-mode update).
  static TimelineSearch build(const TraceModel& model);

  SearchMatches find(const SearchQuery& query) const;
  // The first match starting after (ts_ns, event), in (start, event) order; nullopt past the last.
  std::optional<std::uint32_t> next(const SearchMatches& matches, std::int64_t ts_ns, std::uint32_t event) const;
  // The last match starting before (ts_ns, event); nullopt before the first.
  std::optional<std::uint32_t> previous(const SearchMatches& matches, std::int64_t ts_ns, std::uint32_t event) const;
  // All matches in [t0, t1) by start, at most `limit` of them.
  std::vector<std::uint32_t> in_range(const SearchMatches& matches, std::int64_t t0, std::int64_t t1,
                                      std::size_t limit) const;
  std::size_t event_count() const noexcept { return events_.size(); }
  std::size_t memory_bytes() const noexcept;

 private:
  bool before(std::uint32_t a, std::uint32_t b) const;  // (start, event) order
  const TraceModel* model_ = nullptr;
  std::vector<std::uint32_t> name_ids_;   // names that have events
  std::vector<std::uint64_t> offsets_;    // per string id: its events are events_[offsets_[id], offsets_[id+1])
  std::vector<std::uint32_t> events_;     // grouped by name, each group by (start, event)
};

}  // namespace cudascope::analysis
