#pragma once
// The viewer's index over a trace (TraceModel): the rows a timeline shows, in the order
// Perfetto users expect, and per row the events at each nesting depth ("lanes") sorted by
// start, so drawing a frame, hit-testing a point and summarising a range cost
// O(pixels x log events) whatever the trace's size.
//
// Rows: per process (processes by sort index then pid, as TraceModel::track_order()): a
// process header, its counters as area rows (device memory), then one row per thread or
// GPU stream with one lane per nesting depth (NVTX ranges and annotations above what runs
// inside them; runtime/driver calls, CPU ops, kernels, copies, memsets).
//
// Level of detail, Tracy's way: items() returns one item per event at least `min_px`
// wide, and merges runs of narrower events (closer than `min_px` to each other) into one
// item that counts them. No event is ever left out: each event overlapping the range is
// either an item or counted in a merged item.
//
// UI-free (no Qt). Build once (any thread); const queries may run concurrently. update()
// must not run concurrently with queries.

#include <cudascope/analysis/trace_model.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cudascope::analysis {

struct TimelineRow {
  enum class Kind : std::uint8_t { process, slices, counter };
  Kind kind = Kind::slices;
  std::uint32_t process = 0;        // index into TraceModel::processes()
  std::uint32_t track = UINT32_MAX; // slices: index into TraceModel::tracks()
  std::uint32_t counter = UINT32_MAX, series = 0;  // counter: TraceModel::counters()[counter].series[series]
  std::string label;
  std::uint16_t lanes = 1;          // nesting depths shown (slices rows)
  bool gpu = false;                 // a GPU's process or stream
};

// One box to draw: an event, or a merged run of events too narrow to draw alone.
struct TimelineItem {
  std::int64_t start_ns = 0, end_ns = 0;
  std::uint32_t event = 0;   // the event (a merged run: its first event)
  std::uint32_t count = 1;   // events in this item (> 1: a merged run)
  std::uint32_t first = 0;   // position of the first event in its lane (lane_event())
  std::uint16_t depth = 0;
  bool merged() const noexcept { return count > 1; }
};

class TimelineIndex {
 public:
  static TimelineIndex build(const TraceModel& model);
  // Takes in what the model gained since build()/update() (follow mode): tracks that gained
  // events are indexed again (new events can close ranges opened before), rows and flows are
  // recomputed. Cost proportional to the changed tracks' events plus the flows.
  void update(const TraceModel& model);

  const std::vector<TimelineRow>& rows() const noexcept { return rows_; }
  // Time span of all events (ns); begin == end for an empty trace.
  std::int64_t begin_ns() const noexcept { return begin_ns_; }
  std::int64_t end_ns() const noexcept { return end_ns_; }
  std::size_t indexed_events() const noexcept { return indexed_; }

  // Items of slice row `row` overlapping [t0, t1], lane by lane (depth ascending), at a
  // scale of `ns_per_px`: events at least `min_px` wide are items of their own, narrower
  // ones merge with neighbours less than `min_px` away. Appends to `out`.
  // Only lanes [depth_begin, depth_end) are visited (a view draws the lanes it shows).
  void items(std::uint32_t row, std::int64_t t0, std::int64_t t1, double ns_per_px, std::vector<TimelineItem>& out,
             double min_px = 1.0, std::uint16_t depth_begin = 0, std::uint16_t depth_end = UINT16_MAX) const;
  // Events in lane `depth` of `row`, by start: count, and the event at a position.
  std::size_t lane_size(std::uint32_t row, std::uint16_t depth) const;
  std::uint32_t lane_event(std::uint32_t row, std::uint16_t depth, std::size_t position) const;
  // The event at time t in lane `depth` of `row` (the innermost covering t, else the
  // nearest within `slack_ns`); nullopt when none.
  std::optional<std::uint32_t> event_at(std::uint32_t row, std::uint16_t depth, std::int64_t t,
                                        std::int64_t slack_ns) const;
  // The slices row showing `event` (UINT32_MAX for events on no track: M, C, flows).
  std::uint32_t row_of_track(std::uint32_t track) const;
  // Flows (indices into TraceModel::flows()) bound to `event` at either end.
  std::vector<std::uint32_t> flows_of(const TraceModel& model, std::uint32_t event) const;

  // Counter rows: per pixel column of [t0, t1] (`columns` of them), the largest value the
  // counter held in the column (the value carried in from before it and the samples inside
  // it); NaN before the first sample. Also the series' maximum, for the row's scale.
  void counter_columns(const TraceModel& model, std::uint32_t row, std::int64_t t0, std::int64_t t1, int columns,
                       std::vector<double>& out) const;
  double counter_max(const TraceModel& model, std::uint32_t row) const;

  std::size_t memory_bytes() const noexcept;

 private:
  // One nesting depth of a track, by start. Events of one depth may still overlap (async
  // slices, GPU annotations around kernels, a range never closed), so a long event can reach
  // far past later ones: the maximum end per block of 64 and of 4096 events lets a query skip
  // whole blocks that end before the time it looks for, whatever the overlaps.
  static constexpr std::size_t kBlock = 64, kSuper = 4096;
  struct Lane {
    std::vector<std::int64_t> start, end;
    std::vector<std::int64_t> block_end, super_end;  // max end per kBlock / kSuper events
    std::vector<std::uint32_t> event;
    std::int64_t max_end = 0;
  };
  // The first position >= i whose event ends at or after t (the lane's size if none); `skipped`
  // grows to at least the largest end among the positions passed over.
  static std::size_t next_reaching(const Lane& lane, std::size_t i, std::int64_t t, std::int64_t& skipped);
  struct TrackLanes {
    std::vector<Lane> lanes;  // by depth
    std::size_t consumed = 0; // entries of Track::events taken in
  };
  void index_track(const TraceModel& model, std::uint32_t track);
  void build_rows(const TraceModel& model);
  const Lane* lane(std::uint32_t row, std::uint16_t depth) const;

  std::vector<TimelineRow> rows_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> flow_ends_;  // (bound slice, flow), by slice
  std::size_t flows_indexed_ = 0;
  std::vector<TrackLanes> tracks_;        // per TraceModel track
  std::vector<std::uint32_t> track_row_;  // TraceModel track -> row
  std::int64_t begin_ns_ = 0, end_ns_ = 0;
  std::size_t indexed_ = 0;
};

}  // namespace cudascope::analysis
