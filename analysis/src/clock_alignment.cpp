// plan_rank_clocks: each rank's offset to the reference rank from the ends of paired collectives.
#include <cudascope/analysis/clock_alignment.h>

#include <algorithm>
#include <functional>
#include <set>

namespace cudascope::analysis {
namespace {

std::int64_t median(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + std::ptrdiff_t(mid), v.end());
  const std::int64_t hi = v[mid];
  if (v.size() % 2) return hi;
  const std::int64_t lo = *std::max_element(v.begin(), v.begin() + std::ptrdiff_t(mid));
  // The mean of the middle two, rounded to the nearest ns (halves away from zero).
  const std::int64_t sum = lo + hi;
  return sum >= 0 ? (sum + 1) / 2 : -((-sum + 1) / 2);
}

const RankCollectives kNoCollectives;

const RankCollectives& collectives_of(const RankClockInput& input) {
  return input.collectives ? *input.collectives : kNoCollectives;
}

// A rank that shares no group with the reference: aligned through the lowest rank before it
// that is on the reference's clock (aligned, or the reference's host) and shares a group.
ClockAlignment align_through(const std::vector<RankClock>& planned, const std::vector<RankClockInput>& inputs,
                             std::size_t i, CollectivePairing rule) {
  for (std::size_t j = 1; j < i; ++j) {
    const RankClock& via = planned[j];
    if (via.clock == RankClock::Clock::unaligned || via.clock == RankClock::Clock::reference) continue;
    ClockAlignment a = align_on_paired_collectives(collectives_of(inputs[j]), collectives_of(inputs[i]), rule);
    if (a.collectives == 0) continue;
    const bool via_aligned = via.clock == RankClock::Clock::aligned;
    a.offset_ns += via_aligned ? via.alignment.offset_ns : 0;
    a.error_ns += via_aligned ? via.alignment.error_ns : 0;
    a.via_rank = via.rank;
    return a;
  }
  return {};
}

// The offsets (added to the rank's times) under which two parts of one collective overlap in
// time. Each part of an all-reduce receives data from the other, so neither can end before the
// other has started: rank start + offset <= reference end and reference start <= rank end +
// offset. Not every pair keeps the rule (a broadcast's root need not wait for the others, as in
// the parameters DDP broadcasts at the start; a pair joined wrongly by order; timestamps a
// microsecond apart), so each bound leaves out the 2% of pairs that would narrow it most.
class OffsetBounds {
 public:
  void add_pair(std::int64_t reference_start, std::int64_t reference_end, std::int64_t start, std::int64_t end) {
    lows_.push_back(reference_start - end);
    highs_.push_back(reference_end - start);
  }
  // False when there are no pairs or the bounds still contradict each other.
  bool get(std::int64_t& lo, std::int64_t& hi) {
    if (lows_.empty()) return false;
    const auto trimmed = static_cast<std::ptrdiff_t>(lows_.size() / 50);
    std::nth_element(lows_.begin(), lows_.begin() + trimmed, lows_.end(), std::greater<>());
    std::nth_element(highs_.begin(), highs_.begin() + trimmed, highs_.end());
    lo = lows_[std::size_t(trimmed)];
    hi = highs_[std::size_t(trimmed)];
    return lo <= hi;
  }

 private:
  std::vector<std::int64_t> lows_, highs_;
};

// The ends agree to within the last transfer, but not to zero: the rank that contributes last
// may end a little later every time, a lag the spread of the differences (the median absolute
// deviation) does not show (32 us against a deviation of 15 us between two H200s). The true
// offset lies within the bounds, so the error is widened to reach both of them; where they
// contradict each other, the error is the deviation alone.
void widen_to_bounds(ClockAlignment& a, OffsetBounds& bounds) {
  std::int64_t lo = 0, hi = 0;
  if (a.collectives == 0 || !bounds.get(lo, hi)) return;
  a.error_ns = std::max({a.error_ns, a.offset_ns - lo, hi - a.offset_ns});
}

}  // namespace

ClockAlignment align_on_collectives(const std::vector<std::int64_t>& reference_ends, const std::vector<std::int64_t>& ends) {
  ClockAlignment a;
  const std::size_t n = std::min(reference_ends.size(), ends.size());
  a.counts_differ = reference_ends.size() != ends.size();
  a.collectives = int(n);
  if (n == 0) return a;
  std::vector<std::int64_t> diffs(n);
  for (std::size_t k = 0; k < n; ++k) diffs[k] = reference_ends[k] - ends[k];
  a.offset_ns = median(diffs);
  const auto [lo, hi] = std::minmax_element(diffs.begin(), diffs.end());
  a.spread_ns = *hi - *lo;
  std::vector<std::int64_t> deviations(n);
  for (std::size_t k = 0; k < n; ++k) deviations[k] = diffs[k] >= a.offset_ns ? diffs[k] - a.offset_ns : a.offset_ns - diffs[k];
  a.error_ns = median(std::move(deviations));
  return a;
}

ClockAlignment align_on_paired_collectives(const RankCollectives& reference, const RankCollectives& rank,
                                           CollectivePairing rule) {
  std::vector<std::int64_t> reference_ends, ends;
  OffsetBounds bounds;
  std::set<std::string> reference_names, names;
  for (const auto& c : reference) reference_names.insert(c.name);
  for (const auto& c : rank) names.insert(c.name);
  bool one_sided = false;
  for (const auto& paired : pair_collectives(std::vector<const RankCollectives*>{&reference, &rank}, rule)) {
    const auto& first = paired.parts.front();
    const auto& last = paired.parts.back();
    if (first.rank == 0 && last.rank == 1) {
      const CommunicatorCollectives& ours = reference[first.communicator];
      const CommunicatorCollectives& theirs = rank[last.communicator];
      reference_ends.push_back(ours.end_ns[first.index]);
      ends.push_back(theirs.end_ns[last.index]);
      bounds.add_pair(ours.start_ns[first.index], ours.end_ns[first.index], theirs.start_ns[last.index],
                      theirs.end_ns[last.index]);
    } else if (reference_names.count(paired.communicator) && names.count(paired.communicator)) {
      one_sided = true;  // a group both ran, but this collective on one of them only
    }
  }
  ClockAlignment a = align_on_collectives(reference_ends, ends);
  widen_to_bounds(a, bounds);
  a.counts_differ = one_sided;
  a.pairing = rule;
  return a;
}

bool one_host(const std::vector<std::string>& hosts) {
  const std::string* seen = nullptr;
  for (const auto& h : hosts) {
    if (h.empty()) continue;
    if (seen && *seen != h) return false;
    seen = &h;
  }
  return true;
}

const char* to_string(RankClock::Clock clock) noexcept {
  switch (clock) {
    case RankClock::Clock::reference: return "reference";
    case RankClock::Clock::one_clock: return "one clock";
    case RankClock::Clock::aligned: return "aligned";
    case RankClock::Clock::unaligned: return "not aligned";
  }
  return "?";
}

ClockPlan plan_rank_clocks(const std::vector<RankClockInput>& inputs) {
  ClockPlan plan;
  std::vector<std::string> hosts;
  std::vector<const RankCollectives*> collectives;
  for (const auto& input : inputs) {
    hosts.push_back(input.host);
    collectives.push_back(&collectives_of(input));
  }
  plan.one_host = one_host(hosts);
  plan.pairing = pairing_rule(collectives);
  if (inputs.empty()) return plan;
  plan.reference_rank = inputs.front().rank;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    RankClock c;
    c.rank = inputs[i].rank;
    c.host = inputs[i].host;
    c.reference_rank = plan.reference_rank;
    for (const CommunicatorCollectives& communicator : *collectives[i]) c.own_collectives += std::int64_t(communicator.end_ns.size());
    if (plan.one_host) {
      c.clock = RankClock::Clock::one_clock;
    } else if (i == 0) {
      c.clock = RankClock::Clock::reference;
    } else if (!c.host.empty() && c.host == inputs.front().host) {
      c.clock = RankClock::Clock::one_clock;  // the reference's own host: its clock
    } else {
      c.alignment = align_on_paired_collectives(*collectives.front(), *collectives[i], plan.pairing);
      if (c.alignment.collectives == 0) c.alignment = align_through(plan.ranks, inputs, i, plan.pairing);
      c.alignment.pairing = plan.pairing;
      c.clock = c.alignment.collectives > 0 ? RankClock::Clock::aligned : RankClock::Clock::unaligned;
    }
    plan.ranks.push_back(std::move(c));
  }
  return plan;
}

}  // namespace cudascope::analysis
