// The slice open on the CPU thread that launched a kernel (launch_scopes.h).
#include "launch_scopes.h"

#include <cudascope/analysis/event_kind.h>

#include <algorithm>
#include <iterator>
#include <string_view>

namespace cudascope::analysis::detail {
namespace {

// An API call's and its kernel's CUPTI correlation id, in cudascope's traces and Kineto's.
constexpr std::string_view kCorrelation = "correlation";

bool is_api_call(const TraceModel& model, const TraceModel::Event& e) {
  const EventKind kind = category_kind(model.cat(e));
  return kind == EventKind::runtime || kind == EventKind::driver;
}

}  // namespace

const TraceModel::Event* LaunchFlows::launch_of(std::uint32_t kernel) {
  if (!launch_of_kernel_) {
    launch_of_kernel_.emplace();
    for (const TraceModel::Flow& f : model_.flows()) {
      if (f.from_slice != kNoEvent && f.to_slice != kNoEvent) launch_of_kernel_->emplace(f.to_slice, f.from_slice);
    }
  }
  const auto launch = launch_of_kernel_->find(kernel);
  return launch == launch_of_kernel_->end() ? nullptr : &model_.event(launch->second);
}

void LaunchScopes::sort_by_start() {
  for (auto& [track, slices] : by_track_) {
    std::sort(slices.begin(), slices.end(),
              [&](std::uint32_t a, std::uint32_t b) { return model_.event(a).ts_ns < model_.event(b).ts_ns; });
  }
}

const TraceModel::Event* LaunchScopes::of_kernel(std::uint32_t kernel) {
  if (by_track_.empty()) return nullptr;
  if (const TraceModel::Event* call = flows_.launch_of(kernel)) {
    if (const TraceModel::Event* scope = enclosing(*call)) return scope;
  }
  return by_correlation(kernel);
}

const TraceModel::Event* LaunchScopes::enclosing(const TraceModel::Event& call) const {
  const auto slices = by_track_.find(call.track);
  if (slices == by_track_.end()) return nullptr;
  const auto after = std::upper_bound(slices->second.begin(), slices->second.end(), call.ts_ns,
                                      [&](std::int64_t ts, std::uint32_t s) { return ts < model_.event(s).ts_ns; });
  if (after == slices->second.begin()) return nullptr;
  const TraceModel::Event& scope = model_.event(*std::prev(after));
  return scope.end_ns() >= call.end_ns() ? &scope : nullptr;
}

const TraceModel::Event* LaunchScopes::by_correlation(std::uint32_t kernel) {
  const auto correlation = model_.arg_int(model_.event(kernel), kCorrelation);
  if (!correlation) return nullptr;
  if (!scope_of_call_) {
    scope_of_call_.emplace();
    for (const auto& [track, slices] : by_track_)
      for (std::uint32_t scope : slices) index_calls_inside(scope);
  }
  const auto found = scope_of_call_->find(*correlation);
  return found == scope_of_call_->end() ? nullptr : &model_.event(found->second);
}

// Only the calls within the slices are read: their args are parsed here, and a trace holds
// far more API calls than collectives.
void LaunchScopes::index_calls_inside(std::uint32_t scope) {
  const TraceModel::Event& s = model_.event(scope);
  const std::vector<std::uint32_t>& events = model_.tracks()[s.track].events;  // by start
  auto it = std::lower_bound(events.begin(), events.end(), s.ts_ns,
                             [&](std::uint32_t e, std::int64_t ts) { return model_.event(e).ts_ns < ts; });
  for (; it != events.end() && model_.event(*it).ts_ns <= s.end_ns(); ++it) {
    const TraceModel::Event& call = model_.event(*it);
    if (!call.is_slice() || call.end_ns() > s.end_ns() || !is_api_call(model_, call)) continue;
    if (auto correlation = model_.arg_int(call, kCorrelation)) scope_of_call_->emplace(*correlation, scope);
  }
}

}  // namespace cudascope::analysis::detail
