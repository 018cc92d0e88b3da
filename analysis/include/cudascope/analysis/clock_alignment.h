#pragma once
// Several ranks' clocks put on one: the rule the viewer's merged timeline (gui/model
// rank_timeline.h) and `cudascope stats` (rank_merge.h) share.
//
// When every rank names the same host (or none names one), the times are used as recorded:
// one clock. Otherwise every rank is aligned to the reference rank (the first given: the
// lowest) on the ends of matching collectives, paired by collective_pairing.h's rule (by
// communicator and sequence number where the traces name them, else by order). A collective
// cannot end on one rank before the last rank has contributed, so its ends agree to within
// the last chunk's transfer (docs/ranks.md). The offset is the median of (reference end -
// rank end), its estimated error the median absolute deviation of those differences, widened
// to the offsets under which every pair of parts overlaps in time (neither part of a
// collective can end before the other has started): the rank contributing last may end a
// little later every time, a constant lag the deviation does not show (the spread,
// max - min, is kept too). A rank on the reference's own host keeps the reference's
// clock; a rank that shares no group with the reference is aligned through the lowest rank
// before it that is on the reference's clock and shares one, and the errors add up; a rank
// with no collective to match is left as recorded and says so.
//
// Works on the collectives alone (a trace's collectives_by_communicator(), or a rank
// summary's `communicators`, which carry every collective's start and end), so it needs no
// trace in memory.
//
// Thread-safety: free functions, no shared state.

#include <cudascope/analysis/collective_pairing.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cudascope::analysis {

// One rank's clock relative to the reference rank's.
struct ClockAlignment {
  int collectives = 0;         // pairs used
  std::int64_t offset_ns = 0;  // add to this rank's times to put them on the reference's clock
  std::int64_t error_ns = 0;   // median absolute deviation of the paired differences, widened to
                               // the overlap bounds (align_on_paired_collectives)
  std::int64_t spread_ns = 0;  // max - min of the paired differences
  bool counts_differ = false;  // some collective of a group both ran was found on one of them only
  CollectivePairing pairing = CollectivePairing::order;
  int via_rank = -1;           // aligned through this rank (no group shared with the reference)
};

// Pairs the k-th end of `ends` with the k-th of `reference_ends` (the shorter list's count);
// no pairs: all zero.
ClockAlignment align_on_collectives(const std::vector<std::int64_t>& reference_ends, const std::vector<std::int64_t>& ends);
// Pairs a rank's collectives with the reference's by `rule` (pair_collectives), aligns on
// the ends of the pairs and widens the error to the offsets under which every pair overlaps
// (unless those bounds contradict each other).
ClockAlignment align_on_paired_collectives(const RankCollectives& reference, const RankCollectives& rank,
                                           CollectivePairing rule);

// True when every non-empty host name is the same one (absent names count as that host).
bool one_host(const std::vector<std::string>& hosts);

// What the plan needs of one rank.
struct RankClockInput {
  int rank = -1;
  std::string host;                          // "" when the trace does not say
  const RankCollectives* collectives = nullptr;  // null: none
};

// One rank's clock in a plan.
struct RankClock {
  int rank = -1;
  std::string host;
  // reference: the clock the others are put on; one_clock: times as recorded (one host, or the
  // reference's host); aligned: `alignment` applies; unaligned: no collective to match.
  enum class Clock { reference, one_clock, aligned, unaligned } clock = Clock::one_clock;
  ClockAlignment alignment;  // Clock::aligned: the offset to apply
  int reference_rank = -1;
  std::int64_t own_collectives = 0;  // this rank's collectives, paired or not (0: nothing to align on)
};
// "reference", "one clock", "aligned", "not aligned".
const char* to_string(RankClock::Clock clock) noexcept;

struct ClockPlan {
  bool one_host = true;        // every rank names one host (or none names one): times as recorded
  int reference_rank = -1;     // the first rank given
  CollectivePairing pairing = CollectivePairing::order;  // the rule for every rank (pairing_rule)
  std::vector<RankClock> ranks;  // in the order given
};
// Each rank's clock, the first rank given being the reference. `ranks` ordered by rank.
ClockPlan plan_rank_clocks(const std::vector<RankClockInput>& ranks);

}  // namespace cudascope::analysis
