#pragma once
// Shared by the pickle and JSON readers: interning helpers and the final pass that orders
// segments, fills derived fields and checks what the schema promises.

#include <cudascope/analysis/load_error.h>
#include <cudascope/analysis/snapshot.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace cudascope::analysis::detail {

// A block read without an 'address' field (older PyTorch): placed after its predecessor.
inline constexpr uint64_t kUnknownAddress = UINT64_MAX;

class SnapshotBuilder {
 public:
  explicit SnapshotBuilder(std::string source) { snap_.source = std::move(source); }

  Snapshot& snapshot() { return snap_; }
  StreamId stream(uint64_t raw);

  // Segments must reference contiguous block ranges; finish() sorts them by (device,
  // address), rewrites the blocks in that order, fills block addresses and the sizes a
  // segment left out, and sets per-device trace ranges from TraceEntry::device (entries of
  // one device must be contiguous). `end_offset` is used for errors found here.
  Result<Snapshot> finish(uint64_t end_offset);

  // For a file whose trace entries carry no times (older PyTorch): has_times becomes false
  // and each device's entries are numbered 0, 1, 2... in file order, so timelines still
  // order them. Both readers call it when any entry lacked "time_us".
  void number_entries_without_times();

  // Segment fields that were absent in the file and must be computed from the blocks.
  struct Missing {
    bool allocated = false, active = false, requested = false;
  };
  std::vector<Missing> missing;  // parallel to snapshot().segments

 private:
  Snapshot snap_;
  std::unordered_map<uint64_t, StreamId> stream_index_;
};

}  // namespace cudascope::analysis::detail
