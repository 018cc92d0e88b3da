// merge_rank_summaries: the per-rank rows, then each step's fastest, median and slowest rank.
#include <cudascope/analysis/rank_merge.h>

#include <algorithm>
#include <cctype>
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

// "[0, 1]" -> {0, 1}; empty when not named, or cut short ("[0, 1, ..., 63]": PyTorch writes
// at most 30 ranks).
std::set<int> member_ranks(const std::string& members) {
  std::set<int> ranks;
  if (members.find("...") != std::string::npos) return ranks;
  for (std::size_t i = 0; i < members.size();) {
    if (!std::isdigit(static_cast<unsigned char>(members[i]))) {
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < members.size() && std::isdigit(static_cast<unsigned char>(members[end]))) ++end;
    ranks.insert(std::stoi(members.substr(i, end - i)));
    i = end;
  }
  return ranks;
}

struct RankInput {
  std::string label;
  const RankSummary* summary;
};

// The inputs' labels, runs of three or more consecutive ranks as "a-b": "0 2", "0-34 36-255".
std::string rank_list(const std::set<std::size_t>& indices, const std::vector<RankInput>& inputs) {
  std::string out;
  auto add = [&](const std::string& text) { out += (out.empty() ? "" : " ") + text; };
  std::vector<std::size_t> run;  // consecutive ranks not yet written
  auto flush = [&] {
    if (run.size() >= 3) add(inputs[run.front()].label + "-" + inputs[run.back()].label);
    else for (std::size_t i : run) add(inputs[i].label);
    run.clear();
  };
  for (std::size_t i : indices) {
    const int rank = inputs[i].summary->rank;
    const bool follows = !run.empty() && rank >= 0 && inputs[run.back()].summary->rank == rank - 1;
    if (!follows) flush();
    if (rank < 0) add(inputs[i].label);
    else run.push_back(i);
  }
  flush();
  return out;
}

// One communicator's paired collectives: their waits and which rank arrived last.
class CommunicatorFigures {
 public:
  void add(const PairedCollective& p, const std::vector<RankInput>& inputs,
           const std::vector<const RankCollectives*>& collectives) {
    std::set<std::size_t> ranks_here;
    std::int64_t longest = INT64_MIN, shortest = INT64_MAX;
    std::size_t last = 0;
    for (const auto& part : p.parts) {
      ranks_here.insert(part.rank);
      ranks_.insert(part.rank);
      const CommunicatorCollectives& c = (*collectives[part.rank])[part.communicator];
      if (first_ == nullptr) first_ = &c;
      const std::int64_t duration = c.end_ns[part.index] - c.start_ns[part.index];
      longest = std::max(longest, duration);
      if (duration < shortest) shortest = duration, last = part.rank;
    }
    items_.push_back({ranks_here.size(), longest, longest - shortest, inputs[last].label});
  }

  CommunicatorRow row(const std::string& name, const std::vector<RankInput>& inputs) const {
    CommunicatorRow row;
    row.communicator = name.empty() ? "all" : name;
    row.description = first_ ? first_->description : "";
    row.members = first_ ? first_->members : "";
    row.ranks = rank_list(ranks_, inputs);
    std::vector<std::int64_t> longest, waits;
    std::map<std::string, int> last_counts;
    for (const Item& item : items_) {
      if (item.ranks < ranks_.size() || ranks_.size() < 2) {
        ++row.partial;
        continue;
      }
      ++row.collectives;
      longest.push_back(item.longest_ns);
      waits.push_back(item.wait_ns);
      row.wait_max_ns = std::max(row.wait_max_ns, item.wait_ns);
      ++last_counts[item.last];
    }
    if (!longest.empty()) {
      row.median_ns = median(longest);
      row.wait_median_ns = median(waits);
    }
    for (const auto& [label, count] : last_counts) {
      if (count > row.last_to_arrive_count) row.last_to_arrive = label, row.last_to_arrive_count = count;
    }
    return row;
  }

  // The inputs' ranks that ran the communicator's collectives but are not among the members
  // the traces name for it.
  std::vector<std::string> strangers(const std::vector<RankInput>& inputs) const {
    const std::set<int> members = member_ranks(first_ ? first_->members : "");
    std::vector<std::string> out;
    if (members.empty()) return out;
    for (std::size_t r : ranks_) {
      if (members.count(inputs[r].summary->rank) == 0) out.push_back(inputs[r].label);
    }
    return out;
  }

 private:
  struct Item {
    std::size_t ranks;
    std::int64_t longest_ns, wait_ns;
    std::string last;
  };
  std::vector<Item> items_;
  std::set<std::size_t> ranks_;
  const CommunicatorCollectives* first_ = nullptr;
};

// Why kernels of no named communicator were left out under a communicator rule.
std::string unnamed_note(const RankReport& report, std::int64_t unnamed) {
  if (report.collective_pairing == CollectivePairing::nccl_communicator_and_order) {
    return std::to_string(unnamed) + " communication kernels were launched outside an NCCL range naming their " +
           "communicator (grouped calls, CUDA graphs, NCCL before 2.25): left unpaired";
  }
  return std::to_string(unnamed) + " communication kernels name no process group (their op was not recorded): left unpaired";
}

// Pairs the ranks' collectives (collective_pairing.h) and sums them up per communicator.
void add_communicators(const std::vector<RankInput>& inputs, RankReport& report) {
  std::vector<const RankCollectives*> collectives;
  for (const RankInput& input : inputs) collectives.push_back(&input.summary->communicators);
  report.collective_pairing = pairing_rule(collectives);
  std::map<std::string, CommunicatorFigures> by_name;
  for (const PairedCollective& p : pair_collectives(collectives, report.collective_pairing)) {
    by_name[p.communicator].add(p, inputs, collectives);
  }
  for (const auto& [name, figures] : by_name) {
    report.communicators.push_back(figures.row(name, inputs));
    for (const std::string& stranger : figures.strangers(inputs)) {
      report.notes.push_back("communicator " + name + ": rank " + stranger + " ran its collectives but is not among its members " +
                             report.communicators.back().members);
    }
  }
  std::int64_t unnamed = 0;
  for (const RankCollectives* communicators : collectives)
    for (const CommunicatorCollectives& c : *communicators) unnamed += c.name.empty() ? std::int64_t(c.start_ns.size()) : 0;
  if (report.collective_pairing != CollectivePairing::order && unnamed > 0) report.notes.push_back(unnamed_note(report, unnamed));
  if (report.collective_pairing == CollectivePairing::order && report.communicators.size() == 1 &&
      report.communicators.front().collectives > 0) {
    report.notes.push_back(
        "collectives paired by order: the traces name no process group and sequence number (torch.profiler's traces do) "
        "nor NCCL communicator (cudascope's traces of NCCL 2.25 or later do); with several process groups, a pair may "
        "join different groups' collectives");
  }
}

// Each rank's clock relative to the lowest rank's (clock_alignment.h), from the collectives'
// ends the summaries carry.
void add_clocks(const std::vector<RankInput>& inputs, RankReport& report) {
  std::vector<RankClockInput> clocks;
  std::set<int> seen;
  for (const RankInput& input : inputs) {
    const RankSummary& s = *input.summary;
    if (s.rank < 0 || !seen.insert(s.rank).second) continue;
    clocks.push_back({s.rank, s.host, &s.communicators});
  }
  report.clocks = plan_rank_clocks(clocks);
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
  std::vector<RankInput> inputs;
  for (std::size_t i : order) {
    inputs.push_back({summaries[i].rank >= 0 ? std::to_string(summaries[i].rank) : summaries[i].file, &summaries[i]});
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
  add_communicators(inputs, report);
  add_clocks(inputs, report);
  return report;
}

}  // namespace cudascope::analysis
