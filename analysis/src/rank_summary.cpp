// summarize_rank: one pass over a trace's events gathers each device's activity intervals
// (compute, communication, copies) and the step ranges; interval unions then give each
// step's figures (rank_summary.h has the definitions).
#include <cudascope/analysis/event_kind.h>
#include <cudascope/analysis/rank_summary.h>
#include <cudascope/util/communication_kernel.h>

#include "interval_set.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <unordered_map>

namespace cudascope::analysis {
namespace {

enum class DeviceKind { none, kernel, copy };

// Kernels and copies (fills count as copies), by the categories' shared reading (event_kind.h).
DeviceKind device_kind(std::string_view cat) {
  const EventKind kind = category_kind(cat);
  if (kind == EventKind::kernel) return DeviceKind::kernel;
  if (kind == EventKind::memcpy || kind == EventKind::memset) return DeviceKind::copy;
  return DeviceKind::none;
}

// One device's activity, as intervals until finish() turns them into unions.
struct DeviceActivity {
  IntervalSet compute, communication, copies;
  IntervalSet busy, exposed;  // computed by finish()
  void finish() {
    compute.normalize();
    communication.normalize();
    copies.normalize();
    busy = IntervalSet::united({&compute, &communication, &copies});
    exposed = communication.minus(compute);
  }
};

struct StepCandidate {
  std::int64_t start_ns, end_ns;
  std::uint32_t name;
};

enum class StepRule { prefix, profiler_step, step_name };

bool has_communication_mark(const TraceModel& model, const TraceModel::Event& e) {
  return model.args_json(e).find("\"communication\":true") != std::string_view::npos;
}

// is_communication_kernel_event for events already known to be kernels, the name test cached
// per interned name (a trace has millions of kernels and few names).
class CommunicationTest {
 public:
  explicit CommunicationTest(const TraceModel& model) : model_(model) {}
  bool operator()(const TraceModel::Event& e) {
    auto [it, added] = by_name_.try_emplace(e.name, false);
    if (added) it->second = util::is_communication_kernel(model_.name(e));
    return it->second || has_communication_mark(model_, e);
  }

 private:
  const TraceModel& model_;
  std::unordered_map<std::uint32_t, bool> by_name_;
};

struct Gathered {
  std::map<int, DeviceActivity> devices;
  std::vector<StepCandidate> profiler_steps, step_names, prefixed;
  std::int64_t kernels = 0, communication_kernels = 0;
};

// The single pass over the events.
Gathered gather(const TraceModel& model, const RankSummaryOptions& options) {
  Gathered g;
  CommunicationTest communication(model);
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const TraceModel::Event& e = model.event(i);
    if (!e.is_slice() || e.dur_ns < 0) continue;
    const TraceModel::Process& process = model.processes()[model.tracks()[e.track].process];
    const DeviceKind kind = device_kind(model.cat(e));
    if (kind != DeviceKind::none) {
      DeviceActivity& device = g.devices[process.device >= 0 ? process.device : static_cast<int>(process.pid)];
      if (kind == DeviceKind::copy) {
        device.copies.add(e.ts_ns, e.end_ns());
      } else if (++g.kernels; communication(e)) {
        ++g.communication_kernels;
        device.communication.add(e.ts_ns, e.end_ns());
      } else {
        device.compute.add(e.ts_ns, e.end_ns());
      }
      continue;
    }
    if (process.device >= 0) continue;  // GPU-side annotations mirror the host's ranges
    const std::string_view name = model.name(e);
    const StepCandidate candidate{e.ts_ns, e.end_ns(), e.name};
    if (!options.step_prefix.empty()) {
      if (name.substr(0, options.step_prefix.size()) == options.step_prefix) g.prefixed.push_back(candidate);
    } else if (name.substr(0, 13) == "ProfilerStep#") {
      g.profiler_steps.push_back(candidate);
    } else if (is_step_name(name)) {
      g.step_names.push_back(candidate);
    }
  }
  for (auto& [id, device] : g.devices) device.finish();
  return g;
}

// Outermost step ranges in time order: one nested in an earlier one is not a step. One that
// starts before the previous step ends but ends after it is the next step: Kineto rounds a
// slice's ts and dur to the nanosecond separately, so ProfilerStep#N may end a nanosecond
// after ProfilerStep#N+1 begins, and dropping that step lost every other step of a trace.
std::vector<StepCandidate> outermost(std::vector<StepCandidate> candidates) {
  std::sort(candidates.begin(), candidates.end(), [](const StepCandidate& a, const StepCandidate& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<StepCandidate> steps;
  for (const StepCandidate& c : candidates) {
    if (!steps.empty() && c.end_ns <= steps.back().end_ns) continue;
    steps.push_back(c);
  }
  return steps;
}

StepTimes times_over(const std::map<int, DeviceActivity>& devices, std::string name, std::int64_t start, std::int64_t end) {
  StepTimes t;
  t.name = std::move(name);
  t.start_ns = start;
  t.end_ns = end;
  for (const auto& [id, d] : devices) {
    t.compute_ns += d.compute.measure(start, end);
    t.communication_ns += d.communication.measure(start, end);
    t.exposed_communication_ns += d.exposed.measure(start, end);
    t.copy_ns += d.copies.measure(start, end);
    t.idle_ns += (end - start) - d.busy.measure(start, end);
  }
  return t;
}

}  // namespace

bool is_step_name(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // "step 3", "step#3", "step_3", "iteration: 7": the number and its separator go.
  while (!lower.empty() && (std::isdigit(static_cast<unsigned char>(lower.back())) || lower.back() == ' ' ||
                            lower.back() == '#' || lower.back() == '_' || lower.back() == '-' || lower.back() == ':')) {
    lower.pop_back();
  }
  for (char& c : lower) c = c == '_' || c == '-' ? ' ' : c;
  static constexpr std::string_view kNames[] = {"step", "train step", "training step", "iteration", "iter",
                                                "train iteration", "training iteration"};
  return std::find(std::begin(kNames), std::end(kNames), lower) != std::end(kNames);
}

bool is_communication_kernel_event(const TraceModel& model, const TraceModel::Event& e) {
  if (!e.is_slice() || device_kind(model.cat(e)) != DeviceKind::kernel) return false;
  return util::is_communication_kernel(model.name(e)) || has_communication_mark(model, e);
}

RankSummary summarize_rank(const TraceModel& model, const std::string& file, const RankSummaryOptions& options) {
  RankSummary s;
  s.file = file;
  s.format = to_string(model.format);
  s.rank = model.rank;
  s.local_rank = model.local_rank;
  s.world_size = model.world_size;
  s.host = model.host;
  s.backend = model.distributed_backend;
  Gathered g = gather(model, options);
  s.kernels = g.kernels;
  s.communication_kernels = g.communication_kernels;
  std::int64_t first = INT64_MAX, last = INT64_MIN;
  for (const auto& [id, d] : g.devices) {
    s.devices.push_back(id);
    if (d.busy.empty()) continue;
    first = std::min(first, d.busy.front_start());
    last = std::max(last, d.busy.back_end());
  }
  if (first > last) first = last = 0;
  s.total = times_over(g.devices, "all", first, last);

  std::vector<StepCandidate>* chosen = &g.step_names;
  s.step_rule = "step names";
  if (!options.step_prefix.empty()) {
    chosen = &g.prefixed;
    s.step_rule = "prefix '" + options.step_prefix + "'";
  } else if (!g.profiler_steps.empty()) {
    chosen = &g.profiler_steps;
    s.step_rule = "ProfilerStep";
  }
  if (chosen->empty()) s.step_rule = "none";
  for (const StepCandidate& c : outermost(std::move(*chosen))) {
    s.steps.push_back(times_over(g.devices, std::string(model.string(c.name)), c.start_ns, c.end_ns));
  }
  s.communicators = collectives_by_communicator(model);
  return s;
}

}  // namespace cudascope::analysis
