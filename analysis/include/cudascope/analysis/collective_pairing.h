#pragma once
// Which collectives of different ranks are one operation. torch.profiler's traces name each
// NCCL kernel's process group and its sequence number on that group (the record_param_comms
// op's "Process Group Name" and "Seq", which Kineto copies onto the kernel it launched), so
// an operation is the same on every rank of its group by (group, sequence number). Without
// sequence numbers: the k-th collective of each group. cudascope's own traces see NCCL's
// kernels but not PyTorch's process groups; they name each NCCL call's communicator instead
// (NCCL 2.25 on: the NCCL range around the call carries the communicator's hash, written as
// "0x..."), and NCCL requires every rank of a communicator to issue its collectives in the
// same order, so there an operation is the k-th collective of its communicator. Without
// either: the k-th communication kernel of each rank, which is wrong as soon as two groups
// interleave (tensor-parallel pairs and data-parallel pairs over the same ranks). Every table
// and view that pairs collectives says which rule it used.
//
// Thread-safety: free functions, no shared state.

#include <cudascope/analysis/trace_model.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace cudascope::analysis {

// One rank's collectives on one communicator, in start order.
struct CommunicatorCollectives {
  std::string name;         // "Process Group Name", or the NCCL communicator's hash ("0x1f...");
                            // "" when the trace names neither
  std::string description;  // "Process Group Description" ("default_pg", "tp", ...)
  std::string members;      // "Process Group Ranks" as written ("[0, 1]"); "" when not named
  bool has_sequence = true; // every collective carries "Seq"
  bool nccl_communicator = false;  // named by NCCL's communicator hash, not by a process group
  std::vector<std::int64_t> seq;  // per collective: "Seq" (-1 when absent)
  std::vector<std::int64_t> start_ns, end_ns;
  std::vector<std::uint32_t> kernel;  // per collective: its kernel's event in the model it was found in
                                      // (empty in a summary read back: collective_key() then finds none)
};

// One rank's collectives, by communicator.
using RankCollectives = std::vector<CommunicatorCollectives>;

// A trace's communication kernels (is_communication_kernel_event) by communicator: the
// group and sequence number from the kernel's args, else from the record_param_comms op of
// the same "External id" (the op that launched it) or enclosing its launch call; else the
// communicator of the NCCL range (NVTX domain "NCCL", its hash in "payload") enclosing the
// launch call. A kernel's launch call is the CPU-side slice its ac2g flow starts from, else
// the API call inside such an op or range with the kernel's "correlation" (NCCL launches
// with the driver API, whose calls cudascope records for NCCL without a flow). Kernels of
// neither form one communicator named "".
std::vector<CommunicatorCollectives> collectives_by_communicator(const TraceModel& model);

// The same for a model holding several ranks' traces (the viewer's merged timeline): the
// collectives of each of `ranks` ranks, process p of the model belonging to rank
// process_rank[p] (an index into the result; -1 or past the end: to none, left out). A
// kernel's record_param_comms op or NCCL range is looked for among its own rank's slices only,
// as correlation and External ids repeat across ranks.
std::vector<RankCollectives> collectives_by_rank(const TraceModel& model, const std::vector<int>& process_rank,
                                                 std::size_t ranks);

enum class CollectivePairing { communicator_and_sequence, communicator_and_order, nccl_communicator_and_order, order };
// "communicator and sequence number", "communicator and order", "NCCL communicator and order",
// "order".
const char* to_string(CollectivePairing rule) noexcept;

// The strongest rule every rank's collectives allow: communicator and sequence number when
// every rank names the groups of its collectives and every named one has a sequence number;
// NCCL communicator and order when every one named is an NCCL communicator (cudascope's
// traces); communicator and order when some named ones have no sequence number; order when
// some rank with collectives names no communicator. Ranks without collectives do not weaken
// it. Under the communicator rules, kernels of no named communicator (a collective whose op
// fell outside torch.profiler's window, an NCCL kernel launched outside its call's range)
// stay unpaired rather than turning every rank back to order.
// The ranks are given by pointer so a merge of many summaries pairs them without a copy.
CollectivePairing pairing_rule(const std::vector<const RankCollectives*>& ranks);
CollectivePairing pairing_rule(const std::vector<RankCollectives>& ranks);

// One operation across ranks: its part on each rank that ran it.
struct PairedCollective {
  struct Part {
    std::size_t rank = 0;          // index into the ranks given
    std::size_t communicator = 0;  // index into that rank's communicators
    std::size_t index = 0;         // index into that communicator's collectives
  };
  std::string communicator;  // the group's or NCCL communicator's name; "" under order pairing
  std::int64_t key = 0;      // the sequence number, or the position (order rules)
  std::vector<Part> parts;   // by rank
};
// Pairs the ranks' collectives by `rule`; ordered by communicator, then key. Under the
// communicator rules, the communicator named "" is left out.
std::vector<PairedCollective> pair_collectives(const std::vector<const RankCollectives*>& ranks, CollectivePairing rule);
std::vector<PairedCollective> pair_collectives(const std::vector<RankCollectives>& ranks, CollectivePairing rule);

// One communication kernel's collective as pair_collectives() pairs it: the key its parts on
// the other ranks share, its place on its rank, and the ranks that ran collectives there.
struct CollectiveKey {
  std::string communicator;        // PairedCollective::communicator ("" under order pairing)
  std::int64_t key = 0;            // PairedCollective::key
  std::size_t position = 0;        // its index among its rank's collectives on the communicator (under
  std::size_t count = 0;           //   order: all of them), in start order; and how many there are
  std::vector<std::size_t> ranks;  // the ranks with collectives on the communicator (order: with any)
};
// The key of the collective of ranks[rank] whose kernel is event `kernel` of the model that
// rank's collectives were found in (CommunicatorCollectives::kernel); none for another event,
// and under the communicator rules for a kernel of no named communicator (left unpaired).
std::optional<CollectiveKey> collective_key(const std::vector<RankCollectives>& ranks, std::size_t rank,
                                            std::uint32_t kernel, CollectivePairing rule);

}  // namespace cudascope::analysis
