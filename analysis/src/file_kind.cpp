#include <cudascope/analysis/file_kind.h>

#include "byte_order_mark.h"

#include <cudascope/util/byte_source.h>

#include <cctype>
#include <cstdio>
#include <memory>
#include <string_view>

namespace cudascope::analysis {
namespace {

constexpr size_t kHeadBytes = 1 << 20;

// Top-level keys that only one kind of file has.
constexpr std::string_view kTraceKeys[] = {"traceEvents",   "schemaVersion",  "deviceProperties", "baseTimeNanoseconds",
                                           "distributedInfo", "displayTimeUnit", "traceName",       "cudascope"};
constexpr std::string_view kSnapshotKeys[] = {"segments", "device_traces", "allocator_settings", "external_annotations"};
// A bare array is a trace's events or torch.cuda.memory_snapshot()'s list of segments: keys
// only an event has, and keys only a segment has.
constexpr std::string_view kEventKeys[] = {"ph", "ts", "dur", "pid", "tid", "cat"};
constexpr std::string_view kSegmentKeys[] = {"total_size", "allocated_size", "active_size", "segment_type", "blocks"};

// Position of `"key"` followed by optional space and ':', or npos.
size_t key_position(std::string_view text, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  for (size_t at = text.find(quoted); at != std::string_view::npos; at = text.find(quoted, at + 1)) {
    size_t i = at + quoted.size();
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i < text.size() && text[i] == ':') return at;
  }
  return std::string_view::npos;
}

}  // namespace

const char* to_string(FileKind kind) noexcept { return kind == FileKind::snapshot ? "allocator snapshot" : "trace"; }

Result<FileKind> detect_file_kind(const std::string& path) {
  std::string error;
  std::unique_ptr<util::PeekedInput> input = util::PeekedInput::open(path, UINT64_MAX, error);
  if (!input) return LoadError{path, 0, error};
  return detect_file_kind(*input);
}

Result<FileKind> detect_file_kind(util::PeekedInput& input) {
  const std::string& path = input.path();
  const std::string_view head = input.head(kHeadBytes);
  if (head.empty() && !input.error().empty()) return LoadError{path, 0, input.error()};
  size_t first = detail::byte_order_mark_length(head);
  while (first < head.size() && std::isspace(static_cast<unsigned char>(head[first]))) ++first;
  if (first == head.size()) return LoadError{path, first, "expected an allocator snapshot or a trace, found an empty file"};
  const unsigned char c = static_cast<unsigned char>(head[first]);
  if (c == 0x80) return FileKind::snapshot;
  if (c != '{' && c != '[') {
    char hex[8];
    std::snprintf(hex, sizeof hex, "%02x", c);
    return LoadError{path, first,
                     std::string("expected an allocator snapshot (a pickle or a JSON object) or a trace (JSON), found byte 0x") + hex};
  }
  size_t best = std::string_view::npos;
  FileKind kind = FileKind::trace;
  auto consider = [&](std::string_view key, FileKind k) {
    const size_t at = key_position(head, key);
    if (at < best) best = at, kind = k;
  };
  if (c == '[') {
    for (std::string_view key : kEventKeys) consider(key, FileKind::trace);
    for (std::string_view key : kSegmentKeys) consider(key, FileKind::snapshot);
    return kind;  // an empty array, or one of objects without those keys, reads as an empty trace
  }
  for (std::string_view key : kTraceKeys) consider(key, FileKind::trace);
  for (std::string_view key : kSnapshotKeys) consider(key, FileKind::snapshot);
  if (best == std::string_view::npos)
    return LoadError{path, first,
                     "expected a JSON object with a trace's \"traceEvents\" or a snapshot's \"segments\"/\"device_traces\" "
                     "in its first MiB, found neither"};
  return kind;
}

}  // namespace cudascope::analysis
