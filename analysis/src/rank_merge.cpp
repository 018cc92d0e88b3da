// merge_rank_summaries: the per-rank rows, then each step's fastest, median and slowest rank.
#include <cudascope/analysis/rank_merge.h>

#include <algorithm>
#include <set>

namespace cudascope::analysis {
namespace {

void accumulate(StepTimes& sum, const StepTimes& t) {
  sum.compute_ns += t.compute_ns;
  sum.communication_ns += t.communication_ns;
  sum.exposed_communication_ns += t.exposed_communication_ns;
  sum.copy_ns += t.copy_ns;
  sum.idle_ns += t.idle_ns;
  sum.end_ns += t.duration_ns();  // sum.start_ns stays 0: end_ns is the steps' total length
}

RankRow rank_row(const RankSummary& s) {
  RankRow row;
  row.rank = s.rank;
  row.label = s.rank >= 0 ? std::to_string(s.rank) : s.file;
  row.host = s.host;
  row.file = s.file;
  row.steps = static_cast<int>(s.steps.size());
  if (s.steps.empty()) {
    row.sum = s.total;
    row.sum.end_ns = s.total.duration_ns();
    row.sum.start_ns = 0;
    return row;
  }
  row.sum.name = "steps";
  for (const StepTimes& t : s.steps) {
    accumulate(row.sum, t);
    row.step_max_ns = std::max(row.step_max_ns, t.duration_ns());
  }
  row.step_mean_ns = row.sum.end_ns / row.steps;
  return row;
}

// Each rank's step names distinct: match by name; else by order.
bool names_distinct(const std::vector<RankSummary>& summaries) {
  for (const RankSummary& s : summaries) {
    std::set<std::string> seen;
    for (const StepTimes& t : s.steps) {
      if (!seen.insert(t.name).second) return false;
    }
  }
  return true;
}

std::int64_t median(std::vector<std::int64_t> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

struct RankStep {
  std::string label;
  const StepTimes* times;
};

StepRow step_row(const std::string& key, const std::vector<RankStep>& ranks) {
  StepRow row;
  row.step = key;
  row.ranks = static_cast<int>(ranks.size());
  std::vector<std::int64_t> durations;
  const RankStep* fastest = &ranks.front();
  const RankStep* slowest = &ranks.front();
  const RankStep* exposed = &ranks.front();
  for (const RankStep& r : ranks) {
    durations.push_back(r.times->duration_ns());
    if (r.times->duration_ns() < fastest->times->duration_ns()) fastest = &r;
    if (r.times->duration_ns() > slowest->times->duration_ns()) slowest = &r;
    if (r.times->exposed_communication_ns > exposed->times->exposed_communication_ns) exposed = &r;
  }
  row.fastest = fastest->label;
  row.fastest_ns = fastest->times->duration_ns();
  row.slowest = slowest->label;
  row.slowest_ns = slowest->times->duration_ns();
  row.median_ns = median(std::move(durations));
  row.most_exposed = exposed->label;
  row.most_exposed_ns = exposed->times->exposed_communication_ns;
  return row;
}

// A job's ranks that have no input: the largest world size the summaries give, minus the
// ranks they cover. At scale a missing rank is easy to overlook in a table of hundreds.
std::string missing_ranks_note(const std::vector<RankSummary>& summaries) {
  int world = -1;
  std::set<int> present;
  for (const RankSummary& s : summaries) {
    world = std::max(world, s.world_size);
    if (s.rank >= 0) present.insert(s.rank);
  }
  if (world <= 0) return {};
  std::string listed;
  int missing = 0;
  constexpr int kListed = 20;
  for (int r = 0; r < world; ++r) {
    if (present.count(r) != 0) continue;
    if (++missing <= kListed) listed += (missing == 1 ? "" : ", ") + std::to_string(r);
  }
  if (missing == 0) return {};
  return std::to_string(missing) + " of the world's " + std::to_string(world) + " ranks have no input: " + listed +
         (missing > kListed ? ", ..." : "");
}

}  // namespace

RankReport merge_rank_summaries(const std::vector<RankSummary>& summaries) {
  RankReport report;
  std::vector<std::size_t> order(summaries.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const int ra = summaries[a].rank < 0 ? INT32_MAX : summaries[a].rank;
    const int rb = summaries[b].rank < 0 ? INT32_MAX : summaries[b].rank;
    return ra < rb;
  });
  std::map<std::string, int> labels;
  for (std::size_t i : order) {
    report.ranks.push_back(rank_row(summaries[i]));
    if (++labels[report.ranks.back().label] == 2) {
      report.notes.push_back("rank " + report.ranks.back().label + " appears in more than one input (" +
                             report.ranks.back().file + " among them)");
    }
  }

  report.matched_by_name = names_distinct(summaries);
  std::vector<std::string> keys;                       // in first-seen order
  std::map<std::string, std::vector<RankStep>> by_key;
  for (std::size_t i : order) {
    const RankSummary& s = summaries[i];
    const std::string label = s.rank >= 0 ? std::to_string(s.rank) : s.file;
    for (std::size_t k = 0; k < s.steps.size(); ++k) {
      const std::string key = report.matched_by_name ? s.steps[k].name : "#" + std::to_string(k);
      auto [it, added] = by_key.try_emplace(key);
      if (added) keys.push_back(key);
      it->second.push_back({label, &s.steps[k]});
    }
  }
  for (const std::string& key : keys) {
    report.steps.push_back(step_row(key, by_key[key]));
    if (report.steps.back().ranks > 1) ++report.slowest_counts[report.steps.back().slowest];
  }

  std::set<int> step_counts;
  for (const RankRow& row : report.ranks) step_counts.insert(row.steps);
  if (step_counts.size() > 1) {
    report.notes.push_back("the ranks have different numbers of steps (" + std::to_string(*step_counts.begin()) + " to " +
                           std::to_string(*step_counts.rbegin()) + "): steps only some ranks have are compared among those");
  }
  if (std::string missing = missing_ranks_note(summaries); !missing.empty()) report.notes.push_back(std::move(missing));
  if (!report.matched_by_name) report.notes.push_back("step names repeat within a rank: steps matched by their order");
  return report;
}

}  // namespace cudascope::analysis
