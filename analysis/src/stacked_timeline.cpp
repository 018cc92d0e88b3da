#include <cudascope/analysis/stacked_timeline.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace cudascope::analysis {
namespace {

constexpr size_t kBlock = 64;                        // events per block_max_ entry
constexpr size_t kCheckpointBudget = size_t{48} << 20;  // bytes of live-set checkpoints

bool opens(Action a, StackedTimeline::Kind kind) {
  return kind == StackedTimeline::Kind::allocations ? a == Action::alloc
                                                    : (a == Action::segment_alloc || a == Action::segment_map);
}
bool closes(Action a, StackedTimeline::Kind kind) {
  return kind == StackedTimeline::Kind::allocations ? a == Action::free_completed
                                                    : (a == Action::segment_free || a == Action::segment_unmap);
}

}  // namespace

struct StackedTimeline::Cursor {
  std::vector<uint32_t> live;  // interval ids, ascending (= stacking order)
  int64_t at = -2;             // last applied event; -1: before the first; -2: nothing loaded
};

uint32_t StackedTimeline::colour(uint32_t interval) {
  // A fixed palette of distinguishable hues, picked by a hash of the id so neighbours differ.
  static constexpr uint32_t kPalette[] = {
      0xff4e79a7, 0xfff28e2b, 0xffe15759, 0xff76b7b2, 0xff59a14f, 0xffedc948, 0xffb07aa1, 0xffff9da7,
      0xff9c755f, 0xffbab0ac, 0xff1f77b4, 0xffff7f0e, 0xff2ca02c, 0xffd62728, 0xff9467bd, 0xff8c564b,
      0xffe377c2, 0xff17becf, 0xffbcbd22, 0xff6b9ac4, 0xffc49c94, 0xff98df8a, 0xffaec7e8, 0xffffbb78};
  const uint32_t h = (interval * 2654435761u) >> 16;
  return kPalette[h % (sizeof kPalette / sizeof kPalette[0])];
}

StackedTimeline StackedTimeline::build(const Snapshot& snap, int device, Kind kind) {
  StackedTimeline t;
  const DeviceTrace range = snap.device_trace(device);
  const auto& trace = snap.trace;
  if (range.size() > 0) {
    t.begin_us_ = trace[range.begin].time_us;
    t.end_us_ = trace[range.end - 1].time_us;
  }

  // Pass 1: pair opens and closes by address. Intervals that close without opening began
  // before the trace (ring buffer) and go below everything traced.
  struct Raw {
    TimelineInterval iv;
    bool pre = false;
  };
  std::vector<Raw> raw;
  std::vector<std::pair<uint32_t, bool>> raw_events;  // (raw index, begin)
  std::vector<int64_t> times;
  std::unordered_map<uint64_t, uint32_t> open;
  int64_t last_time = t.begin_us_;
  for (uint32_t i = range.begin; i < range.end; ++i) {
    const TraceEntry& e = trace[i];
    const int64_t time = std::max(last_time, e.time_us);  // keep event times sorted
    last_time = time;
    if (opens(e.action, kind)) {
      if (auto it = open.find(e.addr); it != open.end()) {  // reopened without a close: end the old one here
        raw[it->second].iv.end_us = time;
        raw[it->second].iv.end_entry = i;
        raw_events.emplace_back(it->second, false);
        times.push_back(time);
      }
      Raw r;
      r.iv = TimelineInterval{time, t.end_us_, e.addr, e.size, i, UINT32_MAX, e.stack, e.stream};
      open[e.addr] = static_cast<uint32_t>(raw.size());
      raw_events.emplace_back(static_cast<uint32_t>(raw.size()), true);
      raw.push_back(r);
      times.push_back(time);
    } else if (closes(e.action, kind)) {
      uint32_t idx;
      if (auto it = open.find(e.addr); it != open.end()) {
        idx = it->second;
        open.erase(it);
      } else {
        Raw r;
        r.pre = true;
        r.iv = TimelineInterval{t.begin_us_, time, e.addr, e.size, UINT32_MAX, UINT32_MAX, e.stack, e.stream};
        idx = static_cast<uint32_t>(raw.size());
        raw.push_back(r);
      }
      raw[idx].iv.end_us = time;
      raw[idx].iv.end_entry = i;
      raw_events.emplace_back(idx, false);
      times.push_back(time);
    }
  }
  // What the final state holds that the trace never opened was live throughout.
  std::vector<TimelineInterval> throughout;
  auto add_throughout = [&](uint64_t addr, uint64_t size, StackId stack, StreamId stream) {
    throughout.push_back(TimelineInterval{t.begin_us_, t.end_us_, addr, size, UINT32_MAX, UINT32_MAX, stack, stream});
  };
  for (const Segment& s : snap.segments) {
    if (s.device != device) continue;
    if (kind == Kind::segments) {
      if (!open.count(s.address)) add_throughout(s.address, s.total_size, s.stack, s.stream);
      continue;
    }
    for (uint32_t b = s.first_block; b < s.first_block + s.block_count; ++b) {
      const Block& blk = snap.blocks[b];
      if (blk.state != BlockState::inactive && !open.count(blk.address))
        add_throughout(blk.address, blk.size, blk.stack, s.stream);
    }
  }

  // Final ids: live-throughout first, then pre-trace ones in close order, then traced ones
  // in open order.
  std::vector<uint32_t> id_of(raw.size());
  t.intervals_ = std::move(throughout);
  for (uint32_t r = 0; r < raw.size(); ++r)
    if (raw[r].pre) id_of[r] = static_cast<uint32_t>(t.intervals_.size()), t.intervals_.push_back(raw[r].iv);
  t.first_traced_ = static_cast<uint32_t>(t.intervals_.size());
  for (uint32_t r = 0; r < raw.size(); ++r)
    if (!raw[r].pre) id_of[r] = static_cast<uint32_t>(t.intervals_.size()), t.intervals_.push_back(raw[r].iv);
  const size_t n = t.intervals_.size();
  t.begin_event_.assign(n, UINT32_MAX);
  t.end_event_.assign(n, UINT32_MAX);
  t.events_.reserve(raw_events.size());
  for (size_t k = 0; k < raw_events.size(); ++k) {
    const uint32_t id = id_of[raw_events[k].first];
    t.events_.push_back(Event{id, raw_events[k].second});
    (raw_events[k].second ? t.begin_event_ : t.end_event_)[id] = static_cast<uint32_t>(k);
  }
  t.event_time_ = std::move(times);
  if (t.end_us_ <= t.begin_us_) t.end_us_ = t.begin_us_ + 1;

  // Pass 2: totals, peak, and checkpoints of the live set.
  for (uint32_t id = 0; id < t.first_traced_; ++id) {
    t.initial_.push_back(id);
    t.initial_bytes_ += t.intervals_[id].size;
  }
  const size_t events = t.events_.size();
  t.totals_.resize(events);
  uint64_t live_bytes = t.initial_bytes_;
  uint64_t live_sum = 0;  // sum over events of the live count, to size the checkpoint spacing
  int64_t live_count = static_cast<int64_t>(t.initial_.size());
  for (size_t k = 0; k < events; ++k) {
    const Event& ev = t.events_[k];
    const uint64_t size = t.intervals_[ev.interval].size;
    live_bytes += ev.begin ? size : -size;
    live_count += ev.begin ? 1 : -1;
    live_sum += static_cast<uint64_t>(std::max<int64_t>(live_count, 0));
    t.totals_[k] = live_bytes;
  }
  t.peak_bytes_ = t.initial_bytes_;
  t.block_max_.assign((events + kBlock - 1) / kBlock, 0);
  for (size_t k = 0; k < events; ++k) {
    t.peak_bytes_ = std::max(t.peak_bytes_, t.totals_[k]);
    t.block_max_[k / kBlock] = std::max(t.block_max_[k / kBlock], t.totals_[k]);
  }
  if (events > 0) {
    const double avg_live = double(live_sum) / double(events);
    t.spacing_ = std::max<size_t>(32, static_cast<size_t>(std::ceil(double(events) * avg_live * 4.0 / kCheckpointBudget)));
  }
  std::vector<uint32_t> live = t.initial_;
  for (size_t k = 0; k < events; ++k) {
    const Event& ev = t.events_[k];
    if (ev.begin) live.push_back(ev.interval);
    else if (auto it = std::lower_bound(live.begin(), live.end(), ev.interval); it != live.end() && *it == ev.interval)
      live.erase(it);
    if ((k + 1) % t.spacing_ == 0) t.checkpoints_.push_back(live);
  }
  return t;
}

size_t StackedTimeline::memory_bytes() const {
  size_t bytes = intervals_.capacity() * sizeof(TimelineInterval) + event_time_.capacity() * 8 +
                 events_.capacity() * sizeof(Event) + totals_.capacity() * 8 + block_max_.capacity() * 8 +
                 (begin_event_.capacity() + end_event_.capacity() + initial_.capacity()) * 4;
  for (const auto& c : checkpoints_) bytes += c.capacity() * 4 + sizeof c;
  return bytes;
}

void StackedTimeline::seek(Cursor& c, int64_t target) const {
  if (c.at == -2 || target < c.at || target - c.at > static_cast<int64_t>(spacing_)) {
    const int64_t j = (target + 1) / static_cast<int64_t>(spacing_) - 1;  // checkpoint j: after event (j+1)*spacing-1
    if (j < 0) {
      c.live = initial_;
      c.at = -1;
    } else {
      c.live = checkpoints_[static_cast<size_t>(j)];
      c.at = (j + 1) * static_cast<int64_t>(spacing_) - 1;
    }
  }
  while (c.at < target) {
    const Event& ev = events_[static_cast<size_t>(++c.at)];
    if (ev.begin) c.live.push_back(ev.interval);
    else if (auto it = std::lower_bound(c.live.begin(), c.live.end(), ev.interval); it != c.live.end() && *it == ev.interval)
      c.live.erase(it);
  }
}

int64_t StackedTimeline::representative(size_t lo, size_t hi) const {
  if (hi <= lo) return static_cast<int64_t>(lo) - 1;  // no event inside: the state after the last one before
  size_t best = lo;
  uint64_t best_total = totals_[lo];
  size_t k = lo;
  while (k < hi) {
    if (k % kBlock == 0 && k + kBlock <= hi) {  // a whole block: only enter it if it can win
      if (block_max_[k / kBlock] > best_total) {
        for (size_t i = k; i < k + kBlock; ++i)
          if (totals_[i] > best_total) best_total = totals_[i], best = i;
      }
      k += kBlock;
    } else {
      if (totals_[k] > best_total) best_total = totals_[k], best = k;
      ++k;
    }
  }
  return static_cast<int64_t>(best);
}

void StackedTimeline::column_bounds(const TimelineView& v, int x, size_t& lo, size_t& hi) const {
  const double span = double(v.t1 - v.t0) / double(v.width);
  const auto ta = static_cast<int64_t>(std::floor(double(v.t0) + span * x));
  const auto tb = x + 1 == v.width ? v.t1 + 1 : static_cast<int64_t>(std::floor(double(v.t0) + span * (x + 1)));
  lo = static_cast<size_t>(std::lower_bound(event_time_.begin(), event_time_.end(), ta) - event_time_.begin());
  hi = static_cast<size_t>(std::lower_bound(event_time_.begin() + static_cast<ptrdiff_t>(lo), event_time_.end(), tb) -
                           event_time_.begin());
}

namespace {

// Pixel row of a byte height (non-negative): rounded to nearest. Called for every live
// interval of every column, so it avoids libm's lround.
inline int row_of(uint64_t bytes, double scale) { return static_cast<int>(double(bytes) * scale + 0.5); }

// Walks a live set bottom-up and reports what each pixel row shows. Bands of at least
// a pixel keep their colour; consecutive thinner ones are merged into one run.
template <typename Band, typename Run>
void walk_column(const std::vector<uint32_t>& live, const std::vector<TimelineInterval>& intervals, double scale,
                 int height, Band&& band, Run&& run) {
  uint64_t cum = 0;
  int cum_row = 0;   // row_of(cum): each band's top is the next one's bottom
  int next_row = 0;  // rows below are drawn
  size_t run_first = 0;
  bool in_run = false;
  uint64_t run_start = 0;
  auto flush_run = [&](size_t end_index) {
    if (!in_run) return;
    in_run = false;
    int r0 = std::max(next_row, row_of(run_start, scale));
    int r1 = std::max(r0 + 1, cum_row);  // at least one row
    r1 = std::min(r1, height);
    if (r0 < r1) {
      run(run_first, end_index, r0, r1);
      next_row = r1;
    }
  };
  for (size_t i = 0; i < live.size(); ++i) {
    const uint64_t size = intervals[live[i]].size;
    const int r0 = cum_row;
    const int r1 = row_of(cum + size, scale);
    if (r1 - r0 < 1) {
      if (!in_run) in_run = true, run_first = i, run_start = cum;
      cum += size;
      cum_row = r1;
      continue;
    }
    flush_run(i);
    int start = std::max(r0, next_row);
    if (start >= r1) start = r0;  // a one-row band right after a run: draw it over the run's row
    const int end = std::min(r1, height);
    if (start < end) band(i, start, end);
    next_row = std::max(next_row, end);
    cum += size;
    cum_row = r1;
    if (next_row >= height) return;
  }
  flush_run(live.size());
}

}  // namespace

void StackedTimeline::render(const TimelineView& v, uint32_t* pixels, int stride,
                             std::vector<TimelineColumn>* columns) const {
  const int W = std::max(v.width, 1), H = std::max(v.height, 1);
  for (int y = 0; y < H; ++y) std::fill_n(pixels + static_cast<ptrdiff_t>(y) * stride, W, kBackground);
  if (columns) columns->assign(static_cast<size_t>(W), TimelineColumn{});
  const double scale = double(H) / double(std::max<uint64_t>(v.bytes_max, 1));
  Cursor cursor;
  for (int x = 0; x < W; ++x) {
    size_t lo, hi;
    column_bounds(v, x, lo, hi);
    // Outside the trace's time range nothing is known: leave the column empty.
    if (v.t0 + (v.t1 - v.t0) * double(x + 1) / W < begin_us_ && lo == 0) continue;
    const int64_t rep = representative(lo, hi);
    seek(cursor, rep);
    uint32_t* column = pixels + x;
    walk_column(
        cursor.live, intervals_, scale, H,
        [&](size_t i, int r0, int r1) {
          const uint32_t c = colour(cursor.live[i]);
          for (int r = r0; r < r1; ++r) column[static_cast<ptrdiff_t>(H - 1 - r) * stride] = c;
        },
        [&](size_t, size_t, int r0, int r1) {
          for (int r = r0; r < r1; ++r) column[static_cast<ptrdiff_t>(H - 1 - r) * stride] = kMergedColour;
        });
    if (columns) {
      TimelineColumn& col = (*columns)[static_cast<size_t>(x)];
      col.first_event = lo;
      col.end_event = hi;
      col.event = rep;
      col.live_bytes = rep >= 0 ? totals_[static_cast<size_t>(rep)] : initial_bytes_;
      col.live_count = static_cast<uint32_t>(cursor.live.size());
      // Intervals that began in this column but are not part of the drawn (peak) state:
      // all that began here, less those still live at the drawn event. Intervals are
      // numbered in begin order, so both counts are binary searches (no walk over them).
      const auto first = std::lower_bound(begin_event_.begin() + first_traced_, begin_event_.end(), static_cast<uint32_t>(lo));
      const auto end = std::lower_bound(first, begin_event_.end(), static_cast<uint32_t>(hi));
      const auto first_id = static_cast<uint32_t>(first - begin_event_.begin());
      const auto live_begun = cursor.live.end() - std::lower_bound(cursor.live.begin(), cursor.live.end(), first_id);
      col.churn = static_cast<decltype(col.churn)>((end - first) - live_begun);
    }
  }
}

std::optional<TimelineHit> StackedTimeline::hit(const TimelineView& v, int x, int y) const {
  if (x < 0 || x >= v.width || y < 0 || y >= v.height) return std::nullopt;
  size_t lo, hi;
  column_bounds(v, x, lo, hi);
  Cursor cursor;
  seek(cursor, representative(lo, hi));
  const int row = v.height - 1 - y;
  const double scale = double(v.height) / double(std::max<uint64_t>(v.bytes_max, 1));
  std::optional<TimelineHit> result;
  walk_column(
      cursor.live, intervals_, scale, v.height,
      [&](size_t i, int r0, int r1) {
        if (row >= r0 && row < r1) {
          const uint32_t id = cursor.live[i];
          result = TimelineHit{{id}, intervals_[id].size, false};
        }
      },
      [&](size_t first, size_t last, int r0, int r1) {
        if (row >= r0 && row < r1) {
          TimelineHit h;
          h.merged = true;
          for (size_t i = first; i < last; ++i) {
            h.intervals.push_back(cursor.live[i]);
            h.bytes += intervals_[cursor.live[i]].size;
          }
          result = std::move(h);
        }
      });
  return result;
}

}  // namespace cudascope::analysis
