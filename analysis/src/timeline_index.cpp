#include <cudascope/analysis/timeline_index.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cudascope::analysis {

TimelineIndex TimelineIndex::build(const TraceModel& model) {
  TimelineIndex index;
  index.update(model);
  return index;
}

void TimelineIndex::update(const TraceModel& model) {
  const auto& tracks = model.tracks();
  tracks_.resize(tracks.size());
  // A track that gained events is indexed again from its (sorted) event list: events
  // appended to a growing file can close ranges opened before, which changes old entries.
  for (std::uint32_t t = 0; t < tracks.size(); ++t)
    if (tracks_[t].consumed != tracks[t].events.size()) index_track(model, t);
  indexed_ = 0;
  bool any = false;
  for (const auto& tl : tracks_) {
    indexed_ += tl.consumed;
    for (const Lane& lane : tl.lanes) {
      if (lane.start.empty()) continue;
      const std::int64_t lo = lane.start.front(), hi = lane.max_end;
      begin_ns_ = any ? std::min(begin_ns_, lo) : lo;
      end_ns_ = any ? std::max(end_ns_, hi) : hi;
      any = true;
    }
  }
  for (const auto& c : model.counters())
    for (const auto& s : c.series)
      if (!s.ts_ns.empty()) {
        begin_ns_ = any ? std::min(begin_ns_, s.ts_ns.front()) : s.ts_ns.front();
        end_ns_ = any ? std::max(end_ns_, s.ts_ns.back()) : s.ts_ns.back();
        any = true;
      }
  build_rows(model);
  // Flows by the slices they bind, so a selected event finds its arrows by binary search.
  // A growing trace binds flows as their slices arrive, so they are indexed again each time.
  {
    flow_ends_.clear();
    const auto& flows = model.flows();
    flow_ends_.reserve(flows.size() * 2);
    for (std::uint32_t f = 0; f < flows.size(); ++f) {
      if (flows[f].from_slice != kNoEvent) flow_ends_.emplace_back(flows[f].from_slice, f);
      if (flows[f].to_slice != kNoEvent) flow_ends_.emplace_back(flows[f].to_slice, f);
    }
    std::sort(flow_ends_.begin(), flow_ends_.end());
    flows_indexed_ = flows.size();
  }
}

void TimelineIndex::index_track(const TraceModel& model, std::uint32_t t) {
  const auto& track = model.tracks()[t];
  TrackLanes& tl = tracks_[t];
  tl.lanes.assign(std::size_t{track.max_depth} + 1, Lane{});
  std::vector<std::size_t> sizes(tl.lanes.size(), 0);
  for (std::uint32_t e : track.events) ++sizes[std::min<std::size_t>(model.event(e).depth, sizes.size() - 1)];
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    Lane& lane = tl.lanes[d];
    lane.start.reserve(sizes[d]);
    lane.end.reserve(sizes[d]);
    lane.event.reserve(sizes[d]);
  }
  for (std::uint32_t e : track.events) {
    const auto& ev = model.event(e);
    Lane& lane = tl.lanes[std::min<std::size_t>(ev.depth, tl.lanes.size() - 1)];
    const std::int64_t end = ev.end_ns();
    lane.start.push_back(ev.ts_ns);
    lane.end.push_back(end);
    lane.event.push_back(e);
  }
  for (Lane& lane : tl.lanes) {
    const std::size_t n = lane.start.size();
    lane.block_end.assign((n + kBlock - 1) / kBlock, INT64_MIN);
    lane.super_end.assign((n + kSuper - 1) / kSuper, INT64_MIN);
    lane.max_end = n ? lane.end.front() : 0;
    for (std::size_t i = 0; i < n; ++i) {
      lane.block_end[i / kBlock] = std::max(lane.block_end[i / kBlock], lane.end[i]);
      lane.super_end[i / kSuper] = std::max(lane.super_end[i / kSuper], lane.end[i]);
      lane.max_end = std::max(lane.max_end, lane.end[i]);
    }
  }
  tl.consumed = track.events.size();
}

void TimelineIndex::build_rows(const TraceModel& model) {
  rows_.clear();
  track_row_.assign(model.tracks().size(), UINT32_MAX);
  const auto order = model.track_order();
  std::vector<std::vector<std::uint32_t>> counters_of(model.processes().size());
  for (std::uint32_t c = 0; c < model.counters().size(); ++c) counters_of[model.counters()[c].process].push_back(c);
  // Each process's tracks in track_order()'s order: one pass, so a trace of many processes
  // (one per event, in a hostile file) costs its tracks once, not once per process.
  std::vector<std::vector<std::uint32_t>> tracks_of(model.processes().size());
  for (std::uint32_t t : order) tracks_of[model.tracks()[t].process].push_back(t);
  std::vector<bool> shown(model.processes().size(), false);
  // Processes in the order their first non-empty track appears in track_order(), then
  // processes holding only counters.
  std::vector<std::uint32_t> processes;
  for (std::uint32_t t : order) {  // a process whose threads hold no events gets no rows
    const std::uint32_t p = model.tracks()[t].process;
    if (!shown[p] && t < tracks_.size() && tracks_[t].consumed > 0) shown[p] = true, processes.push_back(p);
  }
  for (std::uint32_t p = 0; p < counters_of.size(); ++p)
    if (!shown[p] && !counters_of[p].empty()) shown[p] = true, processes.push_back(p);

  for (std::uint32_t p : processes) {
    const bool gpu = model.processes()[p].device >= 0;
    TimelineRow header;
    header.kind = TimelineRow::Kind::process;
    header.process = p;
    header.label = model.process_label(p);
    header.gpu = gpu;
    rows_.push_back(std::move(header));
    for (std::uint32_t c : counters_of[p]) {
      const auto& counter = model.counters()[c];
      for (std::uint32_t s = 0; s < counter.series.size(); ++s) {
        TimelineRow row;
        row.kind = TimelineRow::Kind::counter;
        row.process = p;
        row.counter = c;
        row.series = s;
        row.gpu = gpu;
        row.label = std::string(model.string(counter.name));
        if (counter.series.size() > 1 || counter.series[s].key != kNoString)
          row.label += " " + std::string(model.string(counter.series[s].key));
        rows_.push_back(std::move(row));
      }
    }
    for (std::uint32_t t : tracks_of[p]) {
      if (tracks_[t].consumed == 0) continue;  // a named thread without events
      TimelineRow row;
      row.kind = TimelineRow::Kind::slices;
      row.process = p;
      row.track = t;
      row.gpu = gpu;
      row.label = model.track_label(t);
      row.lanes = static_cast<std::uint16_t>(std::max<std::size_t>(1, tracks_[t].lanes.size()));
      track_row_[t] = static_cast<std::uint32_t>(rows_.size());
      rows_.push_back(std::move(row));
    }
  }
}

const TimelineIndex::Lane* TimelineIndex::lane(std::uint32_t row, std::uint16_t depth) const {
  if (row >= rows_.size() || rows_[row].kind != TimelineRow::Kind::slices) return nullptr;
  const auto& lanes = tracks_[rows_[row].track].lanes;
  return depth < lanes.size() ? &lanes[depth] : nullptr;
}

std::size_t TimelineIndex::lane_size(std::uint32_t row, std::uint16_t depth) const {
  const Lane* l = lane(row, depth);
  return l ? l->event.size() : 0;
}

std::uint32_t TimelineIndex::lane_event(std::uint32_t row, std::uint16_t depth, std::size_t position) const {
  return lane(row, depth)->event[position];
}

std::size_t TimelineIndex::next_reaching(const Lane& l, std::size_t i, std::int64_t t, std::int64_t& skipped) {
  const std::size_t n = l.start.size();
  while (i < n) {
    if (const std::size_t s = i / kSuper; l.super_end[s] < t) {
      skipped = std::max(skipped, l.super_end[s]);
      i = (s + 1) * kSuper;
    } else if (const std::size_t b = i / kBlock; l.block_end[b] < t) {
      skipped = std::max(skipped, l.block_end[b]);
      i = (b + 1) * kBlock;
    } else if (l.end[i] < t) {
      skipped = std::max(skipped, l.end[i]);
      ++i;
    } else {
      return i;
    }
  }
  return n;
}

void TimelineIndex::items(std::uint32_t row, std::int64_t t0, std::int64_t t1, double ns_per_px,
                          std::vector<TimelineItem>& out, double min_px, std::uint16_t depth_begin,
                          std::uint16_t depth_end) const {
  if (row >= rows_.size() || rows_[row].kind != TimelineRow::Kind::slices) return;
  const auto& lanes = tracks_[rows_[row].track].lanes;
  // Narrower than `min_ns` is too small to draw alone; a gap under `min_ns` cannot be seen.
  const auto min_ns = static_cast<std::int64_t>(std::max(1.0, std::ceil(ns_per_px * min_px)));
  const auto end_depth = static_cast<std::uint16_t>(std::min<std::size_t>(depth_end, lanes.size()));
  for (std::uint16_t depth = depth_begin; depth < end_depth; ++depth) {
    const Lane& l = lanes[depth];
    const std::size_t n = l.start.size();
    std::int64_t ignored = 0;
    std::size_t i = next_reaching(l, 0, t0, ignored);
    while (i < n && l.start[i] <= t1) {
      if (l.end[i] < t0) {  // an event before the range, after a longer one that reaches into it
        i = next_reaching(l, i, t0, ignored);
        continue;
      }
      if (l.end[i] - l.start[i] >= min_ns) {
        out.push_back({l.start[i], l.end[i], l.event[i], 1, static_cast<std::uint32_t>(i), depth});
        ++i;
        continue;
      }
      // A run: this event and every following one that starts less than min_ns after the
      // run's end and is itself narrow. Events ending before the run's reach are inside it
      // and are passed over a block at a time, so a run costs O(pixels it covers), not O(events).
      const std::size_t first = i;
      std::int64_t run_end = l.end[i];
      std::size_t j = i + 1;
      while (j < n) {
        std::int64_t inside = run_end;
        j = next_reaching(l, j, run_end + min_ns, inside);
        const bool grew = inside > run_end;
        run_end = std::max(run_end, inside);
        if (j < n && l.start[j] < run_end + min_ns && l.end[j] - l.start[j] < min_ns) {
          run_end = std::max(run_end, l.end[j]);
          ++j;
        } else if (!grew) {
          break;
        }
      }
      out.push_back({l.start[first], run_end, l.event[first], static_cast<std::uint32_t>(j - first),
                     static_cast<std::uint32_t>(first), depth});
      i = j;
    }
  }
}

std::optional<std::uint32_t> TimelineIndex::event_at(std::uint32_t row, std::uint16_t depth, std::int64_t t,
                                                     std::int64_t slack_ns) const {
  const Lane* l = lane(row, depth);
  if (!l || l->start.empty()) return std::nullopt;
  // Candidates start at or before t + slack; walk back over them, a block at a time where
  // nothing in the block reaches t - slack.
  std::size_t i = static_cast<std::size_t>(std::upper_bound(l->start.begin(), l->start.end(), t + slack_ns) - l->start.begin());
  std::optional<std::uint32_t> best;
  std::int64_t best_distance = std::numeric_limits<std::int64_t>::max();
  for (std::size_t looked = 0; i > 0 && looked < 8192;) {
    if (const std::size_t b = (i - 1) / kBlock; l->block_end[b] < t - slack_ns) {
      i = b * kBlock;
      continue;
    }
    --i, ++looked;
    const std::int64_t distance = t < l->start[i] ? l->start[i] - t : t > l->end[i] ? t - l->end[i] : 0;
    if (distance <= slack_ns && distance < best_distance) {
      best_distance = distance;
      best = l->event[i];
      if (distance == 0) break;
    }
  }
  return best;
}

std::uint32_t TimelineIndex::row_of_track(std::uint32_t track) const {
  return track < track_row_.size() ? track_row_[track] : UINT32_MAX;
}

std::vector<std::uint32_t> TimelineIndex::flows_of(const TraceModel&, std::uint32_t event) const {
  std::vector<std::uint32_t> out;
  auto it = std::lower_bound(flow_ends_.begin(), flow_ends_.end(), std::make_pair(event, std::uint32_t{0}));
  for (; it != flow_ends_.end() && it->first == event; ++it)
    if (out.empty() || out.back() != it->second) out.push_back(it->second);
  return out;
}

void TimelineIndex::counter_columns(const TraceModel& model, std::uint32_t row, std::int64_t t0, std::int64_t t1,
                                    int columns, std::vector<double>& out) const {
  out.assign(static_cast<std::size_t>(std::max(columns, 0)), std::numeric_limits<double>::quiet_NaN());
  if (row >= rows_.size() || rows_[row].kind != TimelineRow::Kind::counter || columns <= 0 || t1 <= t0) return;
  const auto& s = model.counters()[rows_[row].counter].series[rows_[row].series];
  const double ns_per_col = double(t1 - t0) / columns;
  // The value in force at t0 is the last sample at or before it.
  auto it = std::upper_bound(s.ts_ns.begin(), s.ts_ns.end(), t0);
  std::size_t i = static_cast<std::size_t>(it - s.ts_ns.begin());
  double carried = i > 0 ? s.values[i - 1] : std::numeric_limits<double>::quiet_NaN();
  for (int c = 0; c < columns; ++c) {
    const auto col_end = t0 + static_cast<std::int64_t>(ns_per_col * (c + 1));
    double v = carried;
    while (i < s.ts_ns.size() && s.ts_ns[i] < col_end) {
      v = std::isnan(v) ? s.values[i] : std::max(v, s.values[i]);
      carried = s.values[i];
      ++i;
    }
    out[static_cast<std::size_t>(c)] = v;
  }
}

double TimelineIndex::counter_max(const TraceModel& model, std::uint32_t row) const {
  if (row >= rows_.size() || rows_[row].kind != TimelineRow::Kind::counter) return 0;
  const auto& values = model.counters()[rows_[row].counter].series[rows_[row].series].values;
  return values.empty() ? 0.0 : *std::max_element(values.begin(), values.end());
}

std::size_t TimelineIndex::memory_bytes() const noexcept {
  std::size_t bytes = rows_.capacity() * sizeof(TimelineRow) + track_row_.capacity() * 4 + flow_ends_.capacity() * 8;
  for (const auto& tl : tracks_)
    for (const Lane& l : tl.lanes)
      bytes += (l.start.capacity() + l.end.capacity() + l.block_end.capacity() + l.super_end.capacity()) * 8 +
               l.event.capacity() * 4;
  return bytes;
}

}  // namespace cudascope::analysis
