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

  // Trace entries arrive one at a time, in file order. They wait in fixed-size chunks and
  // are copied into Snapshot::trace once, at its exact size (gather_entries), so a growing
  // vector never holds two copies of a multi-GB trace at the moment it reallocates.
  void add_entry(const TraceEntry& entry);
  uint32_t entry_count() const { return entry_count_; }
  // Appends the entries added since the last call to snapshot().trace.
  void gather_entries();

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
  // Chunks double from 4K entries up to 1M (48 MB): small files stay small, and large
  // chunks are above glibc's largest mmap threshold (32 MB), so freeing one in
  // gather_entries() returns its pages to the system instead of to the heap.
  static constexpr uint32_t kFirstChunkEntries = 1u << 12;
  static constexpr uint32_t kLargestChunkEntries = 1u << 20;

  Snapshot snap_;
  std::unordered_map<uint64_t, StreamId> stream_index_;
  StreamId last_stream_ = 0;
  std::vector<std::vector<TraceEntry>> entry_chunks_;
  uint32_t entry_count_ = 0;
};

}  // namespace cudascope::analysis::detail
