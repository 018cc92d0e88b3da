#include "nvtx_emit.h"

namespace cudascope::profiler::detail {

void write_nvtx_continuations(Record* first, const char* rest, std::size_t size) noexcept {
  for (std::size_t offset = 0; offset < size; offset += TextPayload::kSize, ++first) {
    start_record(first, RecordKind::kText).device = 0;  // kText records carry no device field
    std::memcpy(first->u.text.text, rest + offset, std::min(TextPayload::kSize, size - offset));
  }
}

}  // namespace cudascope::profiler::detail
