// Collectives by communicator from a trace, and their pairing across ranks
// (collective_pairing.h).
#include <cudascope/analysis/collective_pairing.h>
#include <cudascope/analysis/event_kind.h>
#include <cudascope/analysis/rank_summary.h>

#include "category_kinds.h"
#include "launch_scopes.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace cudascope::analysis {
namespace {

using detail::LaunchFlows;
using detail::LaunchScopes;

// PyTorch's names (torch/csrc/profiler/util.h, Kineto's output_json.cpp).
constexpr std::string_view kParamComms = "record_param_comms";
constexpr std::string_view kGroupName = "Process Group Name";
constexpr std::string_view kGroupDescription = "Process Group Description";
constexpr std::string_view kGroupRanks = "Process Group Ranks";
constexpr std::string_view kSeq = "Seq";
constexpr std::string_view kExternalId = "External id";
// cudascope's NCCL ranges (profiler/src/nccl_nvtx.h): NVTX domain "NCCL", named after the NCCL
// call ("ncclAllReduce"), the communicator's hash as the payload.
constexpr std::string_view kNvtxCategory = "nvtx";
constexpr std::string_view kDomain = "domain";
constexpr std::string_view kNcclDomain = "NCCL";
constexpr std::string_view kNcclCallPrefix = "nccl";
constexpr std::string_view kPayload = "payload";

// What the CPU side of one rank says of the collective a kernel belongs to: the
// record_param_comms op that launched it (the op its "External id" names, else the op enclosing
// its launch), and the NCCL range, naming the communicator, its launch ran in. The flows are
// shared by every rank of a model: their ids never join two ranks.
class CollectiveCalls {
 public:
  CollectiveCalls(const TraceModel& model, LaunchFlows& flows) : model_(model), ops_(model, flows), nccl_ranges_(model, flows) {}

  // A slice on one of the rank's threads; call sort_by_start() after the last.
  void add(std::uint32_t slice) {
    const TraceModel::Event& e = model_.event(slice);
    const std::string_view name = model_.name(e);
    if (name == kParamComms) {
      if (auto id = model_.arg_int(e, kExternalId)) op_by_external_id_.emplace(*id, slice);
      ops_.add(slice);
    } else if (name.starts_with(kNcclCallPrefix) && names_nccl_communicator(e)) {
      nccl_ranges_.add(slice);
    }
  }

  void sort_by_start() {
    ops_.sort_by_start();
    nccl_ranges_.sort_by_start();
  }

  const TraceModel::Event* param_comms_op_of(std::uint32_t kernel) {
    if (auto id = model_.arg_int(model_.event(kernel), kExternalId)) {
      if (const auto it = op_by_external_id_.find(*id); it != op_by_external_id_.end()) return &model_.event(it->second);
    }
    return ops_.of_kernel(kernel);
  }

  std::optional<std::uint64_t> nccl_communicator_of(std::uint32_t kernel) {
    const TraceModel::Event* range = nccl_ranges_.of_kernel(kernel);
    return range == nullptr ? std::nullopt : model_.arg_uint(*range, kPayload);
  }

 private:
  bool names_nccl_communicator(const TraceModel::Event& e) const {
    return model_.cat(e) == kNvtxCategory && model_.arg_string(e, kDomain) == kNcclDomain &&
           model_.arg_uint(e, kPayload).has_value();
  }

  const TraceModel& model_;
  std::unordered_map<std::int64_t, std::uint32_t> op_by_external_id_;
  LaunchScopes ops_;
  LaunchScopes nccl_ranges_;
};

struct GroupOfKernel {
  std::string name, description, members;
  std::optional<std::int64_t> seq;
  bool nccl_communicator = false;
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

// An NCCL communicator's name: its hash in hexadecimal, as NCCL's own logs print commHash.
GroupOfKernel nccl_communicator_group(std::uint64_t hash) {
  char digits[16];
  const auto end = std::to_chars(digits, digits + sizeof digits, hash, 16).ptr;
  GroupOfKernel g;
  g.name = "0x" + std::string(digits, end);
  g.nccl_communicator = true;
  return g;
}

// The process group a kernel's args or its record_param_comms op name, else the NCCL
// communicator of the range it was launched in.
GroupOfKernel group_of(const TraceModel& model, std::uint32_t kernel, CollectiveCalls& calls) {
  GroupOfKernel g = group_in_args(model, model.event(kernel));
  if (!g.name.empty() && g.seq) return g;
  if (const TraceModel::Event* op = calls.param_comms_op_of(kernel)) {
    GroupOfKernel from_op = group_in_args(model, *op);
    if (!from_op.name.empty()) return from_op;
  }
  if (!g.name.empty()) return g;
  if (auto communicator = calls.nccl_communicator_of(kernel)) return nccl_communicator_group(*communicator);
  return g;
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
    sorted.kernel[k] = c.kernel[order[k]];
  }
  c = std::move(sorted);
}

// The rank of an event's process (-1: none).
class ProcessRanks {
 public:
  ProcessRanks(const TraceModel& model, const std::vector<int>& process_rank, std::size_t ranks)
      : model_(model), process_rank_(process_rank), ranks_(ranks) {}
  std::size_t ranks() const { return ranks_; }
  int operator()(const TraceModel::Event& e) const {
    const std::uint32_t p = model_.tracks()[e.track].process;
    const int r = p < process_rank_.size() ? process_rank_[p] : -1;
    return r >= 0 && std::size_t(r) < ranks_ ? r : -1;
  }

 private:
  const TraceModel& model_;
  const std::vector<int>& process_rank_;
  std::size_t ranks_;
};

// Each rank's CPU-side slices, apart: ids and correlations repeat across ranks.
std::vector<CollectiveCalls> calls_by_rank(const TraceModel& model, LaunchFlows& flows, const ProcessRanks& rank_of) {
  std::vector<CollectiveCalls> calls;
  calls.reserve(rank_of.ranks());
  for (std::size_t r = 0; r < rank_of.ranks(); ++r) calls.emplace_back(model, flows);
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const TraceModel::Event& e = model.event(i);
    if (const int r = rank_of(e); e.is_slice() && r >= 0) calls[std::size_t(r)].add(static_cast<std::uint32_t>(i));
  }
  for (CollectiveCalls& c : calls) c.sort_by_start();
  return calls;
}

void add_collective(std::map<std::string, CommunicatorCollectives>& by_name, const GroupOfKernel& g,
                    const TraceModel::Event& e, std::uint32_t kernel) {
  CommunicatorCollectives& c = by_name[g.name];
  c.name = g.name;
  c.nccl_communicator = g.nccl_communicator;
  if (c.description.empty()) c.description = g.description;
  if (c.members.empty()) c.members = g.members;
  c.has_sequence = c.has_sequence && g.seq.has_value();
  c.seq.push_back(g.seq.value_or(-1));
  c.start_ns.push_back(e.ts_ns);
  c.end_ns.push_back(e.end_ns());
  c.kernel.push_back(kernel);
}

RankCollectives sorted_by_start(std::map<std::string, CommunicatorCollectives>& by_name) {
  RankCollectives out;
  for (auto& [name, c] : by_name) {
    sort_by_start(c);
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

std::vector<CommunicatorCollectives> collectives_by_communicator(const TraceModel& model) {
  return std::move(collectives_by_rank(model, std::vector<int>(model.processes().size(), 0), 1).front());
}

std::vector<RankCollectives> collectives_by_rank(const TraceModel& model, const std::vector<int>& process_rank,
                                                 std::size_t ranks) {
  const ProcessRanks rank_of(model, process_rank, ranks);
  LaunchFlows flows(model);
  std::vector<CollectiveCalls> calls = calls_by_rank(model, flows, rank_of);
  // The rule's test (is_communication_kernel_event) reads the category of each event it is
  // given: only kernels, known by their category once per category, are given to it.
  detail::CategoryKinds kind_of(model);
  std::vector<std::map<std::string, CommunicatorCollectives>> by_name(ranks);
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const TraceModel::Event& e = model.event(i);
    const int r = e.is_slice() && kind_of(e) == EventKind::kernel && is_communication_kernel_event(model, e) ? rank_of(e) : -1;
    if (r < 0) continue;
    const auto index = static_cast<std::uint32_t>(i);
    add_collective(by_name[std::size_t(r)], group_of(model, index, calls[std::size_t(r)]), e, index);
  }
  std::vector<RankCollectives> out;
  for (auto& communicators : by_name) out.push_back(sorted_by_start(communicators));
  return out;
}

const char* to_string(CollectivePairing rule) noexcept {
  switch (rule) {
    case CollectivePairing::communicator_and_sequence: return "communicator and sequence number";
    case CollectivePairing::communicator_and_order: return "communicator and order";
    case CollectivePairing::nccl_communicator_and_order: return "NCCL communicator and order";
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

// A rank's collectives of every communicator in one start order: what order pairing counts.
std::vector<PairedCollective::Part> in_start_order(const RankCollectives& communicators, std::size_t rank) {
  std::vector<std::pair<std::int64_t, PairedCollective::Part>> all;
  for (std::size_t c = 0; c < communicators.size(); ++c)
    for (std::size_t i = 0; i < communicators[c].start_ns.size(); ++i) all.push_back({communicators[c].start_ns[i], {rank, c, i}});
  std::stable_sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<PairedCollective::Part> parts;
  parts.reserve(all.size());
  for (const auto& [start, part] : all) parts.push_back(part);
  return parts;
}

// What pairs a named communicator's i-th collective under a communicator rule.
std::int64_t key_under(CollectivePairing rule, const CommunicatorCollectives& c, std::size_t i) {
  return rule == CollectivePairing::communicator_and_sequence ? c.seq[i] : static_cast<std::int64_t>(i);
}

bool same_part(const PairedCollective::Part& a, const PairedCollective::Part& b) {
  return a.rank == b.rank && a.communicator == b.communicator && a.index == b.index;
}

std::optional<PairedCollective::Part> part_of_kernel(const RankCollectives& communicators, std::size_t rank,
                                                    std::uint32_t kernel) {
  for (std::size_t c = 0; c < communicators.size(); ++c) {
    const std::vector<std::uint32_t>& kernels = communicators[c].kernel;
    const auto it = std::find(kernels.begin(), kernels.end(), kernel);
    if (it != kernels.end()) return PairedCollective::Part{rank, c, static_cast<std::size_t>(it - kernels.begin())};
  }
  return std::nullopt;
}

// The ranks with collectives on `communicator`; with "" (order pairing), with any.
std::vector<std::size_t> ranks_running(const std::vector<RankCollectives>& ranks, const std::string& communicator) {
  std::vector<std::size_t> out;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const bool runs = std::any_of(ranks[r].begin(), ranks[r].end(), [&](const CommunicatorCollectives& c) {
      return !c.start_ns.empty() && (communicator.empty() || c.name == communicator);
    });
    if (runs) out.push_back(r);
  }
  return out;
}

}  // namespace

CollectivePairing pairing_rule(const std::vector<RankCollectives>& ranks) { return pairing_rule(pointers_to(ranks)); }

std::vector<PairedCollective> pair_collectives(const std::vector<RankCollectives>& ranks, CollectivePairing rule) {
  return pair_collectives(pointers_to(ranks), rule);
}

CollectivePairing pairing_rule(const std::vector<const RankCollectives*>& ranks) {
  bool named = true, sequenced = true, any_process_group = false;
  for (const RankCollectives* communicators : ranks) {
    bool has_collectives = false, names_a_group = false;
    for (const CommunicatorCollectives& c : *communicators) {
      if (c.start_ns.empty()) continue;
      has_collectives = true;
      if (c.name.empty()) continue;
      names_a_group = true;
      sequenced = sequenced && c.has_sequence;
      any_process_group = any_process_group || !c.nccl_communicator;
    }
    named = named && (names_a_group || !has_collectives);
  }
  if (!named) return CollectivePairing::order;
  if (sequenced) return CollectivePairing::communicator_and_sequence;  // NCCL communicators have no "Seq"
  return any_process_group ? CollectivePairing::communicator_and_order : CollectivePairing::nccl_communicator_and_order;
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
      const std::vector<PairedCollective::Part> all = in_start_order(communicators, r);
      for (std::size_t k = 0; k < all.size(); ++k) add("", static_cast<std::int64_t>(k), all[k]);
      continue;
    }
    for (std::size_t c = 0; c < communicators.size(); ++c) {
      const CommunicatorCollectives& comm = communicators[c];
      if (comm.name.empty()) continue;
      for (std::size_t i = 0; i < comm.start_ns.size(); ++i) add(comm.name, key_under(rule, comm, i), {r, c, i});
    }
  }
  std::vector<PairedCollective> out;
  out.reserve(by_key.size());
  for (auto& [key, paired] : by_key) out.push_back(std::move(paired));
  return out;
}

std::optional<CollectiveKey> collective_key(const std::vector<RankCollectives>& ranks, std::size_t rank,
                                            std::uint32_t kernel, CollectivePairing rule) {
  if (rank >= ranks.size()) return std::nullopt;
  const std::optional<PairedCollective::Part> part = part_of_kernel(ranks[rank], rank, kernel);
  if (!part) return std::nullopt;
  const CommunicatorCollectives& comm = ranks[rank][part->communicator];
  CollectiveKey k;
  if (rule == CollectivePairing::order) {
    const std::vector<PairedCollective::Part> all = in_start_order(ranks[rank], rank);
    k.position = static_cast<std::size_t>(
        std::find_if(all.begin(), all.end(), [&](const PairedCollective::Part& p) { return same_part(p, *part); }) - all.begin());
    k.count = all.size();
    k.key = static_cast<std::int64_t>(k.position);
  } else {
    if (comm.name.empty()) return std::nullopt;
    k.communicator = comm.name;
    k.position = part->index;
    k.count = comm.start_ns.size();
    k.key = key_under(rule, comm, part->index);
  }
  k.ranks = ranks_running(ranks, k.communicator);
  return k;
}

}  // namespace cudascope::analysis
