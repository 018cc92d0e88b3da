#pragma once
// NVTX event attributes carrying only an ASCII message, as a program builds them for
// nvtxDomainRangePushEx (NCCL's init ranges, in the tests of the payload extension's pop).
// Needs the NVTX 3 headers on the include path.

#include <nvtx3/nvToolsExt.h>

namespace cudascope::testing {

inline nvtxEventAttributes_t nvtx_message(const char* ascii) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = ascii;
  return a;
}

}  // namespace cudascope::testing
