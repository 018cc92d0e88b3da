#pragma once
// Builds NVTX records (the message copied inline, continued in kText records) and emits
// them in place into the calling thread's record buffer. Shared by the runtime observer and
// the NVTX injection handlers.

#include <cudascope/profiler/record.h>
#include <cudascope/profiler/record_buffers.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// The rest of a message longer than fits inline, as kText records from `first` on.
void write_nvtx_continuations(Record* first, const char* rest, std::size_t size) noexcept;

// Copies n <= NvtxPayload::kInlineText bytes with a few overlapping fixed-size moves: most
// messages are a few words, and a call to memcpy costs more than the copy.
inline void copy_short_text(char* dst, const char* src, std::size_t n) noexcept {
  static_assert(NvtxPayload::kInlineText <= 48);
  if (n >= 16) {
    std::memcpy(dst, src, 16);
    if (n > 32) std::memcpy(dst + 16, src + 16, 16);
    std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else if (n > 0) {
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

// The record starts all-zero (as make_record's), written straight into its slot in the
// chunk rather than built on the stack and copied. Six 16-byte stores: a memset of this
// size compiles to `rep stos`, whose start-up alone costs more than the whole record.
inline Record& start_record(Record* slot, RecordKind kind) noexcept {
#if defined(__SSE2__)
  static_assert(sizeof(Record) == 96);
  auto* out = reinterpret_cast<__m128i*>(slot);
  const __m128i zero = _mm_setzero_si128();
  // Unrolled by hand: written as a loop, the compiler turns it back into the memset.
  _mm_storeu_si128(out + 0, zero);
  _mm_storeu_si128(out + 1, zero);
  _mm_storeu_si128(out + 2, zero);
  _mm_storeu_si128(out + 3, zero);
  _mm_storeu_si128(out + 4, zero);
  _mm_storeu_si128(out + 5, zero);
#else
  std::memset(static_cast<void*>(slot), 0, sizeof *slot);
#endif
  slot->kind = kind;
  slot->device = -1;
  return *slot;
}

// Inline, so the NVTX handlers (the hot path) fold constant arguments (no attributes, the
// kind) and make no call but the clock's. kind: kNvtxPush, kNvtxMark or kNvtxRangeStart
// (text may be null or empty).
inline bool emit_nvtx_with_text(RecordKind kind, const char* text, std::size_t length, std::int64_t domain,
                                std::uint64_t range_id, std::uint64_t time_ns, const NvtxAttributes& attributes) noexcept {
  if (text == nullptr) length = 0;
  const std::size_t kept = std::min(length, kMaxNvtxText);
  const std::size_t inline_part = std::min(kept, NvtxPayload::kInlineText);
  const std::size_t continuations =
      kept > inline_part ? (kept - inline_part + TextPayload::kSize - 1) / TextPayload::kSize : 0;
  const RecordBuffers::Claim slots = RecordBuffers::process().claim(1 + continuations);
  if (slots.records == nullptr) [[unlikely]] return false;
  Record& r = start_record(slots.records, kind);
  r.stream = kind == RecordKind::kNvtxRangeStart ? static_cast<std::int64_t>(range_id) : domain;
  r.start_ns = r.end_ns = time_ns;
  r.u.nvtx.color = attributes.color;
  r.u.nvtx.has_color = attributes.has_color;
  r.u.nvtx.category = attributes.category;
  r.u.nvtx.payload_kind = attributes.payload_kind;
  r.u.nvtx.payload = attributes.payload;
  r.u.nvtx.truncated = kept < length;
  r.u.nvtx.continuation_records = static_cast<std::uint8_t>(continuations);
  r.text_size = static_cast<std::uint16_t>(kept);
  copy_short_text(r.u.nvtx.text, text, inline_part);
  if (continuations != 0) [[unlikely]] write_nvtx_continuations(slots.records + 1, text + inline_part, kept - inline_part);
  RecordBuffers::publish(slots);
  return true;
}

// kNvtxPop and kNvtxRangeEnd.
inline bool emit_nvtx_end(RecordKind kind, std::int64_t domain, std::uint64_t range_id, std::uint64_t time_ns) noexcept {
  const RecordBuffers::Claim slots = RecordBuffers::process().claim(1);
  if (slots.records == nullptr) [[unlikely]] return false;
  Record& r = start_record(slots.records, kind);
  r.stream = kind == RecordKind::kNvtxRangeEnd ? static_cast<std::int64_t>(range_id) : domain;
  r.start_ns = r.end_ns = time_ns;
  RecordBuffers::publish(slots);
  return true;
}

}  // namespace cudascope::profiler::detail
