// Collectives by communicator from a trace, and their pairing across ranks
// (collective_pairing.h).
#include <cudascope/analysis/collective_pairing.h>
#include <cudascope/analysis/rank_summary.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace cudascope::analysis {
namespace {

// PyTorch's names (torch/csrc/profiler/util.h, Kineto's output_json.cpp).
constexpr std::string_view kParamComms = "record_param_comms";
constexpr std::string_view kGroupName = "Process Group Name";
constexpr std::string_view kGroupDescription = "Process Group Description";
constexpr std::string_view kGroupRanks = "Process Group Ranks";
constexpr std::string_view kSeq = "Seq";
constexpr std::string_view kExternalId = "External id";

// The record_param_comms op that launched a kernel Kineto did not copy the group onto: the op
// its "External id" names, else the op enclosing the runtime call its launch flow (ac2g)
// starts from (a kernel linked to another op of the collective names that op's id).
class LaunchingOps {
 public:
  explicit LaunchingOps(const TraceModel& model) : model_(model) {
    for (std::size_t i = 0; i < model.event_count(); ++i) {
      const TraceModel::Event& e = model.event(i);
      if (!e.is_slice() || model.name(e) != kParamComms) continue;
      const auto index = static_cast<std::uint32_t>(i);
      if (auto id = model.arg_int(e, kExternalId)) by_external_id_.emplace(*id, index);
      by_track_[e.track].push_back(index);
    }
    for (auto& [track, ops] : by_track_) {
      std::sort(ops.begin(), ops.end(),
                [&](std::uint32_t a, std::uint32_t b) { return model.event(a).ts_ns < model.event(b).ts_ns; });
    }
  }

  const TraceModel::Event* of(std::uint32_t kernel) {
    if (auto id = model_.arg_int(model_.event(kernel), kExternalId)) {
      if (const auto it = by_external_id_.find(*id); it != by_external_id_.end()) return &model_.event(it->second);
    }
    return enclosing_launch_of(kernel);
  }

 private:
  const TraceModel::Event* enclosing_launch_of(std::uint32_t kernel) {
    if (by_track_.empty()) return nullptr;
    if (!launch_of_kernel_) {
      launch_of_kernel_.emplace();
      for (const TraceModel::Flow& f : model_.flows()) {
        if (f.from_slice != kNoEvent && f.to_slice != kNoEvent) launch_of_kernel_->emplace(f.to_slice, f.from_slice);
      }
    }
    const auto launch = launch_of_kernel_->find(kernel);
    if (launch == launch_of_kernel_->end()) return nullptr;
    const TraceModel::Event& call = model_.event(launch->second);
    const auto ops = by_track_.find(call.track);
    if (ops == by_track_.end()) return nullptr;
    // These ops do not nest: the last one starting at or before the call is the only candidate.
    const auto after = std::upper_bound(ops->second.begin(), ops->second.end(), call.ts_ns,
                                        [&](std::int64_t ts, std::uint32_t op) { return ts < model_.event(op).ts_ns; });
    if (after == ops->second.begin()) return nullptr;
    const TraceModel::Event& op = model_.event(*std::prev(after));
    return op.end_ns() >= call.end_ns() ? &op : nullptr;
  }

  const TraceModel& model_;
  std::unordered_map<std::int64_t, std::uint32_t> by_external_id_;
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> by_track_;
  std::optional<std::unordered_map<std::uint32_t, std::uint32_t>> launch_of_kernel_;  // built when first needed
};

struct GroupOfKernel {
  std::string name, description, members;
  std::optional<std::int64_t> seq;
};

// A group's name is a string in PyTorch's traces and Seq a number; either written as the other
// (a hand-made or converted trace) is read too.
std::string text_arg(const TraceModel& model, const TraceModel::Event& e, std::string_view key) {
  if (auto text = model.arg_string(e, key)) return *text;
  if (auto number = model.arg_int(e, key)) return std::to_string(*number);
  return {};
}

std::optional<std::int64_t> int_arg(const TraceModel& model, const TraceModel::Event& e, std::string_view key) {
  if (auto number = model.arg_int(e, key)) return number;
  const auto text = model.arg_string(e, key);
  if (!text || text->empty() || text->find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  return std::stoll(*text);
}

GroupOfKernel group_in_args(const TraceModel& model, const TraceModel::Event& e) {
  GroupOfKernel g;
  g.name = text_arg(model, e, kGroupName);
  g.description = text_arg(model, e, kGroupDescription);
  g.members = text_arg(model, e, kGroupRanks);
  g.seq = int_arg(model, e, kSeq);
  return g;
}

GroupOfKernel group_of(const TraceModel& model, std::uint32_t kernel, LaunchingOps& ops) {
  GroupOfKernel g = group_in_args(model, model.event(kernel));
  if (!g.name.empty() && g.seq) return g;
  const TraceModel::Event* op = ops.of(kernel);
  if (op == nullptr) return g;
  GroupOfKernel from_op = group_in_args(model, *op);
  return from_op.name.empty() ? g : from_op;
}

// Whether an event's category is a kernel's, decided once per category: the rule's test
// (is_communication_kernel_event) folds the category's case, too dear for every event of a
// large trace.
class KernelCategories {
 public:
  explicit KernelCategories(const TraceModel& model) : model_(model) {}
  bool operator()(const TraceModel::Event& e) {
    auto [it, added] = known_.try_emplace(e.cat, false);
    if (added) {
      std::string lower(model_.cat(e));
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      it->second = lower == "kernel";
    }
    return it->second;
  }

 private:
  const TraceModel& model_;
  std::unordered_map<std::uint32_t, bool> known_;
};

void sort_by_start(CommunicatorCollectives& c) {
  std::vector<std::size_t> order(c.start_ns.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return c.start_ns[a] < c.start_ns[b]; });
  CommunicatorCollectives sorted = c;
  for (std::size_t k = 0; k < order.size(); ++k) {
    sorted.seq[k] = c.seq[order[k]];
    sorted.start_ns[k] = c.start_ns[order[k]];
    sorted.end_ns[k] = c.end_ns[order[k]];
  }
  c = std::move(sorted);
}

}  // namespace

std::vector<CommunicatorCollectives> collectives_by_communicator(const TraceModel& model) {
  LaunchingOps ops(model);
  KernelCategories kernel(model);
  std::map<std::string, CommunicatorCollectives> by_name;
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const TraceModel::Event& e = model.event(i);
    if (!e.is_slice() || !kernel(e) || !is_communication_kernel_event(model, e)) continue;
    const GroupOfKernel g = group_of(model, static_cast<std::uint32_t>(i), ops);
    CommunicatorCollectives& c = by_name[g.name];
    c.name = g.name;
    if (c.description.empty()) c.description = g.description;
    if (c.members.empty()) c.members = g.members;
    c.has_sequence = c.has_sequence && g.seq.has_value();
    c.seq.push_back(g.seq.value_or(-1));
    c.start_ns.push_back(e.ts_ns);
    c.end_ns.push_back(e.end_ns());
  }
  std::vector<CommunicatorCollectives> out;
  for (auto& [name, c] : by_name) {
    sort_by_start(c);
    out.push_back(std::move(c));
  }
  return out;
}

const char* to_string(CollectivePairing rule) noexcept {
  switch (rule) {
    case CollectivePairing::communicator_and_sequence: return "communicator and sequence number";
    case CollectivePairing::communicator_and_order: return "communicator and order";
    case CollectivePairing::order: return "order";
  }
  return "order";
}

namespace {

std::vector<const RankCollectives*> pointers_to(const std::vector<RankCollectives>& ranks) {
  std::vector<const RankCollectives*> pointers;
  for (const RankCollectives& r : ranks) pointers.push_back(&r);
  return pointers;
}

}  // namespace

CollectivePairing pairing_rule(const std::vector<RankCollectives>& ranks) { return pairing_rule(pointers_to(ranks)); }

std::vector<PairedCollective> pair_collectives(const std::vector<RankCollectives>& ranks, CollectivePairing rule) {
  return pair_collectives(pointers_to(ranks), rule);
}

CollectivePairing pairing_rule(const std::vector<const RankCollectives*>& ranks) {
  bool named = true, sequenced = true;
  for (const RankCollectives* communicators : ranks) {
    bool has_collectives = false, names_a_group = false;
    for (const CommunicatorCollectives& c : *communicators) {
      if (c.start_ns.empty()) continue;
      has_collectives = true;
      if (c.name.empty()) continue;
      names_a_group = true;
      sequenced = sequenced && c.has_sequence;
    }
    named = named && (names_a_group || !has_collectives);
  }
  if (!named) return CollectivePairing::order;
  return sequenced ? CollectivePairing::communicator_and_sequence : CollectivePairing::communicator_and_order;
}

std::vector<PairedCollective> pair_collectives(const std::vector<const RankCollectives*>& ranks, CollectivePairing rule) {
  std::map<std::pair<std::string, std::int64_t>, PairedCollective> by_key;
  auto add = [&](const std::string& communicator, std::int64_t key, PairedCollective::Part part) {
    PairedCollective& p = by_key[{communicator, key}];
    p.communicator = communicator;
    p.key = key;
    p.parts.push_back(part);
  };
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const RankCollectives& communicators = *ranks[r];
    if (rule == CollectivePairing::order) {
      // Every communicator's collectives of the rank in one start order.
      std::vector<std::pair<std::int64_t, PairedCollective::Part>> all;
      for (std::size_t c = 0; c < communicators.size(); ++c)
        for (std::size_t i = 0; i < communicators[c].start_ns.size(); ++i)
          all.push_back({communicators[c].start_ns[i], {r, c, i}});
      std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (std::size_t k = 0; k < all.size(); ++k) add("", static_cast<std::int64_t>(k), all[k].second);
      continue;
    }
    for (std::size_t c = 0; c < communicators.size(); ++c) {
      const CommunicatorCollectives& comm = communicators[c];
      if (comm.name.empty()) continue;
      for (std::size_t i = 0; i < comm.start_ns.size(); ++i) {
        const bool by_seq = rule == CollectivePairing::communicator_and_sequence;
        add(comm.name, by_seq ? comm.seq[i] : static_cast<std::int64_t>(i), {r, c, i});
      }
    }
  }
  std::vector<PairedCollective> out;
  out.reserve(by_key.size());
  for (auto& [key, paired] : by_key) out.push_back(std::move(paired));
  return out;
}

}  // namespace cudascope::analysis
