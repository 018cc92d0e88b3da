#pragma once
// Builds NVTX records (the message copied inline, continued in kText records) and emits
// them into the calling thread's record buffer. Shared by the runtime observer and the
// NVTX injection handlers.

#include <cudascope/profiler/record.h>

#include <cstddef>
#include <cstdint>

namespace cudascope::profiler::detail {

struct NvtxAttributes {
  std::uint32_t color = 0;
  bool has_color = false;
  std::uint32_t category = 0;
  NvtxPayloadKind payload_kind = NvtxPayloadKind::kNone;
  std::uint64_t payload = 0;
};

// Longest message kept; longer ones are cut and marked truncated.
constexpr std::size_t kMaxNvtxText = NvtxPayload::kInlineText + 8 * TextPayload::kSize;

// kind: kNvtxPush, kNvtxMark or kNvtxRangeStart (text may be null or empty).
bool emit_nvtx_with_text(RecordKind kind, const char* text, std::size_t length, std::int64_t domain,
                         std::uint64_t range_id, std::uint64_t time_ns, const NvtxAttributes& attributes) noexcept;
// kNvtxPop and kNvtxRangeEnd.
bool emit_nvtx_end(RecordKind kind, std::int64_t domain, std::uint64_t range_id, std::uint64_t time_ns) noexcept;

}  // namespace cudascope::profiler::detail
