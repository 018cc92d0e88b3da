#pragma once
// One allocator snapshot in memory: PyTorch's schema as compact value types.
// Produced by the loaders (loader.h); everything else (figures, timelines, replay,
// comparison) reads it. Move-only; share it between threads as shared_ptr<const Snapshot>.

#include <cudascope/analysis/intern_tables.h>
#include <cudascope/analysis/types.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace cudascope::analysis {

// The trace entries of one device, a contiguous range of Snapshot::trace.
struct DeviceTrace {
  int device = 0;
  uint32_t begin = 0;
  uint32_t end = 0;
  uint32_t size() const { return end - begin; }
};

// An `external_annotations` record (e.g. a START/END pair around an optimizer step).
struct Annotation {
  StringId stage = 0;
  StringId name = 0;
  int device = 0;
  int64_t time_us = 0;
};

struct Snapshot {
  std::string source;  // the file it was loaded from, for messages and titles

  StringTable strings;
  FrameTable frames;
  StackTable stacks;
  std::vector<uint64_t> streams;  // StreamId -> raw stream value

  std::vector<Segment> segments;   // sorted by (device, address)
  std::vector<Block> blocks;       // grouped by segment, by address within a segment
  std::vector<TraceEntry> trace;   // all devices, grouped by device, in recorded order
  std::vector<DeviceTrace> devices;
  std::vector<std::pair<uint32_t, uint64_t>> oom_device_free;  // (trace index, device_free) of oom entries
  std::vector<std::pair<std::string, std::string>> allocator_settings;  // key, value as text
  std::vector<Annotation> annotations;
  bool has_times = true;  // false when trace entries carried no time_us (older PyTorch)

  std::string_view str(StringId id) const { return strings.get(id); }
  std::span<const FrameId> stack(StackId id) const { return stacks.get(id); }
  // "name (filename:line)"
  std::string frame_text(FrameId id) const;
  // All frames of a stack, one per line, innermost first.
  std::string stack_text(StackId id) const;
  // True when any frame of the stack contains `needle` (case-sensitive) in name or filename.
  bool stack_contains(StackId id, std::string_view needle) const;
  uint64_t stream_value(StreamId id) const { return streams[id]; }
  // The trace range of `device`; an empty range when the device has no trace.
  DeviceTrace device_trace(int device) const;
  // Devices that appear in segments or traces, ascending.
  std::vector<int> device_ids() const;
};

}  // namespace cudascope::analysis
