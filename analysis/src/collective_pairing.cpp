// Collectives by communicator from a trace, and their pairing across ranks
// (collective_pairing.h).
#include <cudascope/analysis/collective_pairing.h>
#include <cudascope/analysis/rank_summary.h>

#include <algorithm>
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

// The record_param_comms ops by their "External id": a kernel Kineto did not copy the
// group onto still names the op that launched it.
std::unordered_map<std::int64_t, std::uint32_t> param_comms_ops(const TraceModel& model) {
  std::unordered_map<std::int64_t, std::uint32_t> ops;
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const TraceModel::Event& e = model.event(i);
    if (!e.is_slice() || model.name(e) != kParamComms) continue;
    if (auto id = model.arg_int(e, kExternalId)) ops.emplace(*id, static_cast<std::uint32_t>(i));
  }
  return ops;
}

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

GroupOfKernel group_of(const TraceModel& model, const TraceModel::Event& kernel,
                       const std::unordered_map<std::int64_t, std::uint32_t>& ops) {
  GroupOfKernel g = group_in_args(model, kernel);
  if (!g.name.empty() && g.seq) return g;
  const auto id = model.arg_int(kernel, kExternalId);
  const auto op = id ? ops.find(*id) : ops.end();
  if (op == ops.end()) return g;
  GroupOfKernel from_op = group_in_args(model, model.event(op->second));
  return from_op.name.empty() ? g : from_op;
}

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
  const auto ops = param_comms_ops(model);
  std::map<std::string, CommunicatorCollectives> by_name;
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const TraceModel::Event& e = model.event(i);
    if (!is_communication_kernel_event(model, e)) continue;
    const GroupOfKernel g = group_of(model, e, ops);
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

CollectivePairing pairing_rule(const std::vector<std::vector<CommunicatorCollectives>>& ranks) {
  bool named = true, sequenced = true;
  for (const auto& communicators : ranks) {
    bool has_collectives = false, names_a_group = false;
    for (const CommunicatorCollectives& c : communicators) {
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

std::vector<PairedCollective> pair_collectives(const std::vector<std::vector<CommunicatorCollectives>>& ranks,
                                               CollectivePairing rule) {
  std::map<std::pair<std::string, std::int64_t>, PairedCollective> by_key;
  auto add = [&](const std::string& communicator, std::int64_t key, PairedCollective::Part part) {
    PairedCollective& p = by_key[{communicator, key}];
    p.communicator = communicator;
    p.key = key;
    p.parts.push_back(part);
  };
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const auto& communicators = ranks[r];
    if (rule == CollectivePairing::order) {
      // Every communicator's collectives of the rank in one start order.
      std::vector<std::pair<std::int64_t, PairedCollective::Part>> all;
      for (std::size_t c = 0; c < communicators.size(); ++c)
        for (std::size_t i = 0; i < communicators[c].start_ns.size(); ++i) all.push_back({communicators[c].start_ns[i], {r, c, i}});
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
