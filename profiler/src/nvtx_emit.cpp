#include "nvtx_emit.h"

#include <cudascope/profiler/record_buffers.h>

#include <algorithm>
#include <cstring>

namespace cudascope::profiler::detail {

bool emit_nvtx_with_text(RecordKind kind, const char* text, std::size_t length, std::int64_t domain,
                         std::uint64_t range_id, std::uint64_t time_ns, const NvtxAttributes& attributes) noexcept {
  constexpr std::size_t kMaxRecords = 1 + (kMaxNvtxText - NvtxPayload::kInlineText) / TextPayload::kSize;
  Record records[kMaxRecords];
  Record& r = records[0];
  r = make_record(kind);
  r.stream = kind == RecordKind::kNvtxRangeStart ? static_cast<std::int64_t>(range_id) : domain;
  r.start_ns = r.end_ns = time_ns;
  r.u.nvtx.color = attributes.color;
  r.u.nvtx.has_color = attributes.has_color;
  r.u.nvtx.category = attributes.category;
  r.u.nvtx.payload_kind = attributes.payload_kind;
  r.u.nvtx.payload = attributes.payload;
  if (text == nullptr) length = 0;
  const std::size_t kept = std::min(length, kMaxNvtxText);
  r.u.nvtx.truncated = kept < length;
  r.text_size = static_cast<std::uint16_t>(kept);
  const std::size_t inline_part = std::min(kept, NvtxPayload::kInlineText);
  if (inline_part > 0) std::memcpy(r.u.nvtx.text, text, inline_part);
  std::size_t count = 1;
  for (std::size_t offset = inline_part; offset < kept; offset += TextPayload::kSize) {
    Record& more = records[count++];
    std::memset(static_cast<void*>(&more), 0, sizeof more);
    more.kind = RecordKind::kText;
    std::memcpy(more.u.text.text, text + offset, std::min(TextPayload::kSize, kept - offset));
  }
  r.u.nvtx.continuation_records = static_cast<std::uint8_t>(count - 1);
  return RecordBuffers::process().emit(records, count);
}

bool emit_nvtx_end(RecordKind kind, std::int64_t domain, std::uint64_t range_id, std::uint64_t time_ns) noexcept {
  Record r = make_record(kind);
  r.stream = kind == RecordKind::kNvtxRangeEnd ? static_cast<std::int64_t>(range_id) : domain;
  r.start_ns = r.end_ns = time_ns;
  return RecordBuffers::process().emit(r);
}

}  // namespace cudascope::profiler::detail
