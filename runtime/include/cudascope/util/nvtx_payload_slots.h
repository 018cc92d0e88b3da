#pragma once
// The NVTX payload extension's range calls (nvToolsExtPayload.h: nvtxRangePushPayload,
// nvtxRangePopPayload, nvtxRangeStartPayload, nvtxRangeEndPayload), as an NVTX injection takes
// them in InitializeInjectionNvtxExtension. Libraries pop ranges through them that they pushed
// with nvtxDomainRangePushEx (NCCL its init calls'): an injection that keeps a thread's range
// stack must take at least the pop, or such a range stays open and the program's next pop
// closes it instead of its own. Needs the NVTX 3 headers (the CUDA toolkit's), as the
// injections that use it do.

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstddef>
#include <cstdint>

namespace cudascope::util {

// The payload extension's oldest release known to number its slots as NVTX3EXT_CBID_* does.
inline constexpr std::uint16_t kNvtxPayloadCompatId = 0x0103;

using NvtxPayloadPush = int(NVTX_API*)(nvtxDomainHandle_t, const nvtxPayloadData_t*, std::size_t);
using NvtxPayloadStart = nvtxRangeId_t(NVTX_API*)(nvtxDomainHandle_t, const nvtxPayloadData_t*, std::size_t);
using NvtxPayloadEnd = void(NVTX_API*)(nvtxDomainHandle_t, nvtxRangeId_t, const nvtxPayloadData_t*, std::size_t);
struct NvtxPayloadRangeHandlers {
  NvtxPayloadPush push = nullptr;  // a null handler leaves its call a no-op
  NvtxPayloadPush pop = nullptr;
  NvtxPayloadStart start = nullptr;
  NvtxPayloadEnd end = nullptr;
};

// Writes the handlers into the payload module's function slots. Another extension module, or
// a payload extension older than kNvtxPayloadCompatId, is left as it is (NVTX makes its calls
// no-ops). False when nothing was written.
inline bool fill_nvtx_payload_range_slots(const nvtxExtModuleInfo_t* module, const NvtxPayloadRangeHandlers& h) noexcept {
  if (module == nullptr || module->moduleId != NVTX_EXT_PAYLOAD_MODULEID || module->compatId < kNvtxPayloadCompatId ||
      module->segmentsCount < 1 || module->segments == nullptr || module->segments[0].functionSlots == nullptr) {
    return false;
  }
  const nvtxExtModuleSegment_t& segment = module->segments[0];
  const auto fill = [&segment](std::size_t id, auto handler) {
    if (handler != nullptr && id < segment.slotCount) segment.functionSlots[id] = reinterpret_cast<std::intptr_t>(handler);
  };
  fill(NVTX3EXT_CBID_nvtxRangePushPayload, h.push);
  fill(NVTX3EXT_CBID_nvtxRangePopPayload, h.pop);
  fill(NVTX3EXT_CBID_nvtxRangeStartPayload, h.start);
  fill(NVTX3EXT_CBID_nvtxRangeEndPayload, h.end);
  return true;
}

}  // namespace cudascope::util
