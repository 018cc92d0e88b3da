#pragma once
// Fills a TraceModel: the loader adds events as it parses them, then index() pairs B/E and
// b/e, sorts each track's slices, computes nesting depths, resolves flows and collects
// counters. index() only looks at events added since its last call, so a followed file's
// new events are indexed without redoing the old ones.
//
// Thread-safety: none; one builder per model, on one thread.

#include <cudascope/analysis/trace_model.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cudascope::analysis {

// A "pid" or "tid" as the file wrote it: a number, or a string.
struct TraceIdValue {
  std::int64_t number = 0;
  std::string_view text;  // set when the file used a string
  bool is_text = false;
};

// One parsed event, before it enters the model. Views point into the loader's buffers.
struct EventDraft {
  char ph = 0;
  bool has_name = false, has_cat = false, has_ts = false, has_dur = false, has_id = false, id_is_text = false;
  bool has_pid = false, has_tid = false, has_args = false;
  std::string_view name, cat, id_text, args;
  TraceIdValue pid, tid;
  std::int64_t ts_ns = 0, dur_ns = -1;
  std::uint64_t id = kNoId;
  std::uint8_t flags = 0;
};

class TraceModelBuilder {
 public:
  explicit TraceModelBuilder(TraceModel& model) : model_(model) {}

  void add(const EventDraft& draft);
  // Indexes the events added since the last call (see the file comment).
  void index();
  TraceModel& model() noexcept { return model_; }

 private:
  std::uint32_t track_of(const TraceIdValue& pid, const TraceIdValue& tid);
  std::uint32_t process_of(const TraceIdValue& pid);
  std::uint64_t store_args(std::string_view text);
  TraceModel::Event& at(std::size_t index) { return model_.chunks_[index >> TraceModel::kChunkBits][index & TraceModel::kChunkMask]; }
  void apply_metadata(const TraceModel::Event& e);
  void pair_ranges(std::size_t from);
  void sort_and_nest(const std::vector<std::uint32_t>& touched, const std::vector<std::size_t>& old_sizes);
  void resolve_flows(std::size_t from);
  std::uint32_t enclosing_slice(std::uint32_t track, std::int64_t ts) const;
  std::uint32_t next_slice(std::uint32_t track, std::int64_t ts) const;
  void collect_counter(std::uint32_t index);

  TraceModel& model_;
  std::size_t indexed_ = 0;
  // Keys: (is text, number or string id) for a pid; (process << 1 | is text, number or string
  // id) for a track. The last track is remembered: events come in runs on one track.
  std::map<std::pair<bool, std::int64_t>, std::uint32_t> process_by_key_;
  std::map<std::pair<std::uint64_t, std::int64_t>, std::uint32_t> track_by_key_;
  std::pair<std::uint64_t, std::int64_t> last_pid_key_{UINT64_MAX, 0}, last_tid_key_{UINT64_MAX, 0};
  std::uint32_t last_track_ = 0;
  // Open B per track, open b per (cat, id), s or f waiting for its pair per (cat, id): kept across
  // index() calls so a followed file's ranges close when their ends arrive.
  std::vector<std::vector<std::uint32_t>> open_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<std::uint32_t>> open_async_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint32_t> flow_starts_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint32_t> flow_finishes_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> counter_by_key_;
};

}  // namespace cudascope::analysis
