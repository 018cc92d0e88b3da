#include "trace_model_builder.h"

#include "trace_json.h"

#include <cudascope/analysis/event_kind.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace cudascope::analysis {
namespace {

// The time from a B's ts to its E's, 0 for an E before its B. A trace's clock may run from
// far below 0 to far above it, where the difference would not fit: it is then the longest.
std::int64_t begin_to_end_ns(std::int64_t begin, std::int64_t end) {
  if (end <= begin) return 0;
  if (begin < 0 && end > INT64_MAX + begin) return INT64_MAX;
  return end - begin;
}

constexpr std::uint64_t kArgsChunk = 4 << 20;
constexpr int kEnclosingSearch = 4096;  // slices looked at when binding a flow

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

}  // namespace

std::uint32_t TraceModelBuilder::process_of(const TraceIdValue& pid) {
  const std::pair<bool, std::int64_t> key{pid.is_text, pid.is_text ? model_.strings_.intern(pid.text) : pid.number};
  const auto [it, added] = process_by_key_.try_emplace(key, static_cast<std::uint32_t>(model_.processes_.size()));
  if (added) {
    TraceModel::Process p;
    p.pid = key.second;
    if (pid.is_text) p.pid_text = static_cast<std::uint32_t>(key.second);
    p.sort_index = pid.is_text ? INT64_MAX / 2 : pid.number;
    model_.processes_.push_back(p);
  }
  return it->second;
}

std::uint32_t TraceModelBuilder::track_of(const TraceIdValue& pid, const TraceIdValue& tid) {
  // Fast path: the same pid and tid as the last event (numbers only; text keys are interned below).
  if (!pid.is_text && !tid.is_text && last_pid_key_ == std::pair<std::uint64_t, std::int64_t>{0, pid.number} &&
      last_tid_key_ == std::pair<std::uint64_t, std::int64_t>{0, tid.number})
    return last_track_;
  const std::uint32_t process = process_of(pid);
  const std::int64_t tid_key = tid.is_text ? model_.strings_.intern(tid.text) : tid.number;
  const std::pair<std::uint64_t, std::int64_t> key{(std::uint64_t{process} << 1) | (tid.is_text ? 1 : 0), tid_key};
  const auto [it, added] = track_by_key_.try_emplace(key, static_cast<std::uint32_t>(model_.tracks_.size()));
  if (added) {
    TraceModel::Track t;
    t.process = process;
    t.tid = tid_key;
    if (tid.is_text) t.tid_text = static_cast<std::uint32_t>(tid_key);
    t.sort_index = tid.is_text ? INT64_MAX / 2 : tid.number;
    model_.tracks_.push_back(std::move(t));
    open_.emplace_back();
  }
  if (!pid.is_text && !tid.is_text) {
    last_pid_key_ = {0, pid.number};
    last_tid_key_ = {0, tid.number};
    last_track_ = it->second;
  }
  return it->second;
}

std::uint64_t TraceModelBuilder::store_args(std::string_view text) {
  const std::uint64_t need = sizeof(std::uint32_t) + text.size();
  if (model_.args_chunks_.empty() || model_.args_used_ + need > model_.args_chunk_size_) {
    model_.args_chunk_size_ = std::max(kArgsChunk, need);
    // Not zeroed: each byte is written before it is read, and a small trace touches few pages.
    model_.args_chunks_.push_back(std::make_unique_for_overwrite<char[]>(model_.args_chunk_size_));
    model_.args_bytes_ += model_.args_chunk_size_;
    model_.args_used_ = 0;
  }
  char* at = model_.args_chunks_.back().get() + model_.args_used_;
  const auto size = static_cast<std::uint32_t>(text.size());
  std::memcpy(at, &size, sizeof size);
  if (!text.empty()) std::memcpy(at + sizeof size, text.data(), text.size());
  const std::uint64_t handle = ((model_.args_chunks_.size() - 1) << 32) | model_.args_used_;
  model_.args_used_ += need;
  return handle;
}

void TraceModelBuilder::add(const EventDraft& d) {
  if ((model_.count_ & TraceModel::kChunkMask) == 0 && (model_.count_ >> TraceModel::kChunkBits) == model_.chunks_.size()) {
    auto* chunk = static_cast<TraceModel::Event*>(std::malloc(sizeof(TraceModel::Event) << TraceModel::kChunkBits));
    if (chunk == nullptr) throw std::bad_alloc();
    model_.chunks_.emplace_back(chunk);
  }
  TraceModel::Event& e = at(model_.count_);
  e = TraceModel::Event{};
  e.ph = d.ph;
  e.ts_ns = d.ts_ns;
  e.dur_ns = d.has_dur ? d.dur_ns : -1;
  e.flags = d.flags;
  if (d.has_name) e.name = model_.strings_.intern(d.name);
  if (d.has_cat) e.cat = model_.strings_.intern(d.cat);
  if (d.has_id) {
    if (d.id_is_text) {
      e.id = model_.strings_.intern(d.id_text);
      e.flags |= TraceModel::kFlagIdIsString;
    } else {
      e.id = d.id;
    }
  }
  e.track = track_of(d.pid, d.tid);
  if (d.has_args) e.args = store_args(d.args);
  ++model_.count_;
}

void TraceModelBuilder::apply_metadata(const TraceModel::Event& e) {
  const std::string_view what = model_.name(e);
  TraceModel::Track& track = model_.tracks_[e.track];
  TraceModel::Process& process = model_.processes_[track.process];
  if (what == "process_name") {
    if (auto v = model_.arg_string(e, "name")) process.name = model_.strings_.intern(*v);
  } else if (what == "process_labels") {
    if (auto v = model_.arg_string(e, "labels")) process.labels = model_.strings_.intern(*v);
  } else if (what == "process_sort_index") {
    if (auto v = model_.arg_int(e, "sort_index")) process.sort_index = *v;
  } else if (what == "thread_name") {
    if (auto v = model_.arg_string(e, "name")) track.name = model_.strings_.intern(*v);
  } else if (what == "thread_sort_index") {
    if (auto v = model_.arg_int(e, "sort_index")) track.sort_index = *v;
  }
}

void TraceModelBuilder::collect_counter(std::uint32_t index) {
  const TraceModel::Event& e = at(index);
  const std::string_view args = model_.args_json(e);
  if (args.size() < 2) return;
  const std::uint32_t process = model_.tracks_[e.track].process;
  const auto [it, added] = counter_by_key_.try_emplace({process, e.name}, static_cast<std::uint32_t>(model_.counters_.size()));
  if (added) model_.counters_.push_back(TraceModel::Counter{process, e.name, {}});
  TraceModel::Counter& counter = model_.counters_[it->second];
  // Members of the minified args object: "key":number pairs (others are skipped).
  std::size_t i = 1;
  while (i < args.size() && args[i] == '"') {
    std::size_t key_end = i + 1;
    while (key_end < args.size() && args[key_end] != '"') key_end += args[key_end] == '\\' ? 2 : 1;
    const std::string_view key = args.substr(i + 1, key_end - i - 1);
    std::size_t value_end = key_end + 2;
    int depth = 0;
    bool in_string = false;
    for (; value_end < args.size(); ++value_end) {
      const char c = args[value_end];
      if (in_string) {
        if (c == '\\') ++value_end;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && depth-- == 0) {
        break;
      } else if (c == ',' && depth == 0) {
        break;
      }
    }
    const std::string_view value = args.substr(key_end + 2, value_end - key_end - 2);
    double number = 0;
    if (detail::parse_double(value, number)) {
      const std::uint32_t key_id = model_.strings_.intern(key);
      auto series = std::find_if(counter.series.begin(), counter.series.end(),
                                 [&](const TraceModel::CounterSeries& s) { return s.key == key_id; });
      if (series == counter.series.end()) {
        counter.series.push_back(TraceModel::CounterSeries{key_id, {}, {}});
        series = counter.series.end() - 1;
      }
      series->ts_ns.push_back(e.ts_ns);
      series->values.push_back(number);
    }
    i = value_end + 1;
  }
}

void TraceModelBuilder::pair_ranges(std::size_t from) {
  for (std::size_t i = from; i < model_.count_; ++i) {
    TraceModel::Event& e = at(i);
    const auto index = static_cast<std::uint32_t>(i);
    switch (e.ph) {
      case 'B': open_[e.track].push_back(index); break;
      case 'E': {
        auto& stack = open_[e.track];
        if (stack.empty()) {
          e.flags |= TraceModel::kFlagUnmatched;
          break;
        }
        TraceModel::Event& begin = at(stack.back());
        begin.dur_ns = begin_to_end_ns(begin.ts_ns, e.ts_ns);
        stack.pop_back();
        break;
      }
      case 'b': open_async_[{e.cat, e.id}].push_back(index); break;
      case 'e': {
        const auto it = open_async_.find({e.cat, e.id});
        if (it == open_async_.end() || it->second.empty()) {
          e.flags |= TraceModel::kFlagUnmatched;
          break;
        }
        TraceModel::Event& begin = at(it->second.back());
        begin.dur_ns = begin_to_end_ns(begin.ts_ns, e.ts_ns);
        it->second.pop_back();
        if (it->second.empty()) open_async_.erase(it);
        break;
      }
      case 'M': apply_metadata(e); break;
      case 'C': collect_counter(index); break;
      default: break;
    }
  }
}

void TraceModelBuilder::sort_and_nest(const std::vector<std::uint32_t>& touched, const std::vector<std::size_t>& old_sizes) {
  const auto before = [this](std::uint32_t a, std::uint32_t b) {
    const TraceModel::Event& x = at(a);
    const TraceModel::Event& y = at(b);
    if (x.ts_ns != y.ts_ns) return x.ts_ns < y.ts_ns;
    // An open B (dur -1) holds everything after it: longest.
    const std::int64_t dx = x.dur_ns < 0 && x.ph != 'X' ? INT64_MAX : x.dur_ns;
    const std::int64_t dy = y.dur_ns < 0 && y.ph != 'X' ? INT64_MAX : y.dur_ns;
    if (dx != dy) return dx > dy;
    return a < b;
  };
  std::vector<std::int64_t> ends;
  for (std::size_t k = 0; k < touched.size(); ++k) {
    TraceModel::Track& track = model_.tracks_[touched[k]];
    auto& list = track.events;
    const auto middle = list.begin() + static_cast<std::ptrdiff_t>(old_sizes[k]);
    if (!std::is_sorted(middle, list.end(), before)) std::sort(middle, list.end(), before);
    if (middle != list.begin() && middle != list.end() && before(*middle, *(middle - 1)))
      std::inplace_merge(list.begin(), middle, list.end(), before);
    ends.clear();
    std::uint16_t max_depth = 0;
    for (const std::uint32_t index : list) {
      TraceModel::Event& e = at(index);
      while (!ends.empty() && ends.back() <= e.ts_ns) ends.pop_back();
      e.depth = static_cast<std::uint16_t>(std::min<std::size_t>(ends.size(), UINT16_MAX));
      max_depth = std::max(max_depth, e.depth);
      if (e.is_slice()) ends.push_back(e.dur_ns < 0 ? INT64_MAX : e.ts_ns + std::max<std::int64_t>(e.dur_ns, 0));
    }
    track.max_depth = max_depth;
  }
}

std::uint32_t TraceModelBuilder::enclosing_slice(std::uint32_t track, std::int64_t ts) const {
  const auto& list = model_.tracks_[track].events;
  auto it = std::partition_point(list.begin(), list.end(),
                                 [&](std::uint32_t i) { return model_.event(i).ts_ns <= ts; });
  for (int steps = 0; it != list.begin() && steps < kEnclosingSearch; ++steps) {
    --it;
    const TraceModel::Event& e = model_.event(*it);
    if (!e.is_slice()) continue;
    if (e.dur_ns < 0 ? e.ph != 'X' : e.ts_ns + e.dur_ns >= ts) return *it;
  }
  return kNoEvent;
}

std::uint32_t TraceModelBuilder::next_slice(std::uint32_t track, std::int64_t ts) const {
  const auto& list = model_.tracks_[track].events;
  auto it = std::partition_point(list.begin(), list.end(), [&](std::uint32_t i) { return model_.event(i).ts_ns < ts; });
  for (; it != list.end(); ++it) {
    if (model_.event(*it).is_slice()) return *it;
  }
  return kNoEvent;
}

void TraceModelBuilder::resolve_flows(std::size_t from) {
  const std::size_t first_new_flow = model_.flows_.size();
  // Pair each "s" with the "f" of the same cat and id, in either file order (Kineto writes
  // a kernel's "f" before its launch's "s").
  for (std::size_t i = from; i < model_.count_; ++i) {
    const TraceModel::Event& e = at(i);
    if ((e.ph != 's' && e.ph != 'f') || e.id == kNoId) continue;
    const std::pair<std::uint32_t, std::uint64_t> key{e.cat, e.id};
    auto& mine = e.ph == 's' ? flow_starts_ : flow_finishes_;
    auto& other = e.ph == 's' ? flow_finishes_ : flow_starts_;
    const auto match = other.find(key);
    if (match == other.end()) {
      mine[key] = static_cast<std::uint32_t>(i);
      continue;
    }
    TraceModel::Flow flow;
    flow.id = e.id;
    flow.cat = e.cat;
    flow.from_event = e.ph == 's' ? static_cast<std::uint32_t>(i) : match->second;
    flow.to_event = e.ph == 'f' ? static_cast<std::uint32_t>(i) : match->second;
    other.erase(match);
    model_.flows_.push_back(flow);
  }
  // Bind new flows, and retry earlier ones whose slices had not arrived yet (a followed file).
  for (std::size_t k = 0; k < model_.flows_.size(); ++k) {
    TraceModel::Flow& flow = model_.flows_[k];
    if (k < first_new_flow && flow.from_slice != kNoEvent && flow.to_slice != kNoEvent) continue;
    if (k < first_new_flow && from == 0) continue;
    const TraceModel::Event& s = at(flow.from_event);
    const TraceModel::Event& f = at(flow.to_event);
    if (flow.from_slice == kNoEvent) flow.from_slice = enclosing_slice(s.track, s.ts_ns);
    if (flow.to_slice == kNoEvent)
      flow.to_slice = (f.flags & TraceModel::kFlagBindEnclosing) ? enclosing_slice(f.track, f.ts_ns) : next_slice(f.track, f.ts_ns);
  }
}

void TraceModelBuilder::index() {
  const std::size_t from = indexed_;
  if (from == model_.count_) return;
  pair_ranges(from);
  // New slices and instants join their tracks.
  std::vector<std::uint32_t> touched;
  std::vector<std::size_t> old_sizes;
  std::vector<bool> seen(model_.tracks_.size(), false);
  bool first = model_.min_ts_ns == 0 && model_.max_ts_ns == 0 && from == 0;
  for (std::size_t i = from; i < model_.count_; ++i) {
    const TraceModel::Event& e = at(i);
    if (e.ph != 'M') {
      if (first) {
        model_.min_ts_ns = model_.max_ts_ns = e.ts_ns;
        first = false;
      }
      model_.min_ts_ns = std::min(model_.min_ts_ns, e.ts_ns);
      model_.max_ts_ns = std::max(model_.max_ts_ns, e.end_ns());
    }
    if (!(e.is_slice() || e.ph == 'i' || e.ph == 'I')) continue;
    if (!seen[e.track]) {
      seen[e.track] = true;
      touched.push_back(e.track);
      old_sizes.push_back(model_.tracks_[e.track].events.size());
    }
    model_.tracks_[e.track].events.push_back(static_cast<std::uint32_t>(i));
    TraceModel::Process& p = model_.processes_[model_.tracks_[e.track].process];
    if (p.device < 0 && p.pid_text == kNoString && p.pid >= 0 && p.pid < 4096 && is_device_event(category_kind(model_.cat(e))))
      p.device = static_cast<int>(p.pid);
  }
  // A ranged B closed in this batch may sit on a track that got nothing else: its depth
  // and order depend on its duration, so such tracks are redone too.
  for (std::size_t i = from; i < model_.count_; ++i) {
    const TraceModel::Event& e = at(i);
    if ((e.ph == 'E' || e.ph == 'e') && from > 0 && !seen[e.track]) {
      seen[e.track] = true;
      touched.push_back(e.track);
      old_sizes.push_back(0);
    }
  }
  for (TraceModel::Process& p : model_.processes_) {
    if (p.device >= 0 || p.pid_text != kNoString) continue;
    const std::string_view label = p.labels != kNoString ? model_.string(p.labels) : model_.string(p.name);
    if (starts_with(label, "GPU ")) p.device = std::atoi(std::string(label.substr(4)).c_str());
  }
  for (std::size_t k = 0; k < touched.size(); ++k) {
    if (old_sizes[k] == 0) continue;
    // Re-sorting from scratch is simplest when ranges closed late: treat the track as new.
    old_sizes[k] = from > 0 ? 0 : old_sizes[k];
  }
  sort_and_nest(touched, old_sizes);
  resolve_flows(from);
  indexed_ = model_.count_;
}

}  // namespace cudascope::analysis
