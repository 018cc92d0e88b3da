#pragma once
// The "active memory" and "cached segments" timelines: intervals (an allocation from alloc
// to free_completed, a segment from segment_alloc/map to segment_free/unmap) stacked in
// the order they began, over real time (time_us).
//
// Rendering works per pixel column. A column shows the stack at the column's peak (the
// event inside it with the most bytes live), so the envelope is exact at every zoom;
// allocations thinner than a pixel are merged into runs drawn in a marker colour, and
// intervals that came and went between two peaks are counted per column (`churn`) so a
// view can mark them: nothing is dropped, small things are merged. The live set at any
// event comes from checkpoints plus a bounded forward replay, so a frame costs
// O(columns x (checkpoint spacing + live intervals + rows)), whatever the zoom.
//
// Build once (any thread); render() and hit() are const and may run concurrently.

#include <cudascope/analysis/snapshot.h>

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

namespace cudascope::analysis {

struct TimelineInterval {
  int64_t begin_us = 0;
  int64_t end_us = 0;          // the trace end when still live at the end
  uint64_t address = 0;
  uint64_t size = 0;
  uint32_t begin_entry = UINT32_MAX;  // trace index of the alloc / segment_alloc; UINT32_MAX: before the trace
  uint32_t end_entry = UINT32_MAX;    // trace index of the free; UINT32_MAX: still live at the end
  StackId stack = 0;
  StreamId stream = 0;
};

struct TimelineView {
  int64_t t0 = 0, t1 = 1;  // time range shown, microseconds
  uint64_t bytes_max = 1;  // bytes at the top edge
  int width = 1, height = 1;
};

// One pixel column as drawn, for tests and hit testing.
struct TimelineColumn {
  size_t first_event = 0, end_event = 0;  // events [first_event, end_event) fall in this column
  int64_t event = -1;          // the representative event index (-1: the state before the trace)
  uint64_t live_bytes = 0;
  uint32_t live_count = 0;
  uint32_t churn = 0;          // intervals that began in the column but are not live at its peak
};

struct TimelineHit {
  std::vector<uint32_t> intervals;  // one, or the members of a merged run
  uint64_t bytes = 0;
  bool merged = false;
};

class StackedTimeline {
 public:
  enum class Kind { allocations, segments };
  static constexpr uint32_t kMergedColour = 0xff5a5a66;
  static constexpr uint32_t kBackground = 0xff1e1e24;

  static StackedTimeline build(const Snapshot& snapshot, int device, Kind kind);

  std::span<const TimelineInterval> intervals() const { return intervals_; }
  int64_t begin_us() const { return begin_us_; }
  int64_t end_us() const { return end_us_; }
  uint64_t peak_bytes() const { return peak_bytes_; }
  size_t event_count() const { return event_time_.size(); }
  // Time of event i (events are interval begins and ends, in trace order).
  int64_t event_time(size_t i) const { return event_time_[i]; }
  // Event indices where interval `id` begins and ends (UINT32_MAX: before / after the trace).
  std::pair<uint32_t, uint32_t> interval_events(uint32_t id) const { return {begin_event_[id], end_event_[id]}; }
  // Bytes live after event i.
  uint64_t live_bytes_after(size_t i) const { return totals_[i]; }
  size_t checkpoint_spacing() const { return spacing_; }
  size_t memory_bytes() const;

  // Draws into ARGB32 pixels (row 0 at the top; `stride` in pixels). Columns holds one
  // entry per x when non-null.
  void render(const TimelineView& view, uint32_t* pixels, int stride,
              std::vector<TimelineColumn>* columns = nullptr) const;
  // What is drawn at pixel (x, y) of `view`; nullopt over the background.
  std::optional<TimelineHit> hit(const TimelineView& view, int x, int y) const;
  // The colour an interval is drawn in.
  static uint32_t colour(uint32_t interval);

 private:
  struct Event {
    uint32_t interval;
    bool begin;
  };
  struct Cursor;  // the live set at some event, advanced forward
  void seek(Cursor& cursor, int64_t event) const;
  int64_t representative(size_t lo, size_t hi) const;
  void column_bounds(const TimelineView& view, int x, size_t& lo, size_t& hi) const;

  std::vector<TimelineInterval> intervals_;  // sorted by begin (the stacking order)
  std::vector<int64_t> event_time_;
  std::vector<Event> events_;
  std::vector<uint64_t> totals_;
  std::vector<uint64_t> block_max_;  // max of totals_ per kBlock events, for peak queries
  std::vector<uint32_t> begin_event_;  // per interval; UINT32_MAX for intervals live before the trace
  std::vector<uint32_t> end_event_;    // per interval; UINT32_MAX while live at the end
  uint32_t first_traced_ = 0;          // intervals [0, first_traced_) began before the trace
  std::vector<uint32_t> initial_;      // intervals live before the first event
  uint64_t initial_bytes_ = 0;
  size_t spacing_ = 64;
  std::vector<std::vector<uint32_t>> checkpoints_;  // live set after event k*spacing_-1 (k>=1)
  int64_t begin_us_ = 0, end_us_ = 1;
  uint64_t peak_bytes_ = 0;
};

}  // namespace cudascope::analysis
