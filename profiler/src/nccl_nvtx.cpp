// The communicator in an NCCL range's extended payload (nccl_nvtx.h).
#include "nccl_nvtx.h"

#include <nvtx3/nvToolsExtPayload.h>

#include <cstddef>
#include <cstring>

namespace cudascope::profiler::detail {
namespace {

// NCCL's static schema ids: NVTX_PAYLOAD_ENTRY_TYPE_SCHEMA_ID_STATIC_START (1 << 24) plus the
// call's NVTX_SID_* (src/include/nvtx.h; the numbers have not changed since 2.19).
constexpr std::uint64_t kNcclSchemaIdBase = std::uint64_t{1} << 24;

// The size (LP64) of each launching call's payload struct since NCCL 2.25, which put the
// communicator first: uint64_t comm, then size_t bytes and the call's ints. Before 2.25 the
// same ids carried the struct without the communicator, 8 bytes smaller; 0: no communicator.
constexpr std::size_t payload_size_with_communicator(std::uint64_t schema_id) noexcept {
  if (schema_id < kNcclSchemaIdBase) return 0;
  switch (schema_id - kNcclSchemaIdBase) {
    case 4:   // AllGather {comm, bytes}
    case 16:  // AlltoAll {comm, bytes}
    case 22:  // Signal {comm, peer, ctx}
    case 23:  // WaitSignal {comm, npeers, ctx}
      return 16;
    case 5:   // AllReduce {comm, bytes, op}
    case 6:   // Broadcast {comm, bytes, root}
    case 7:   // ReduceScatter {comm, bytes, op}
    case 8:   // Reduce {comm, bytes, root, op}
    case 9:   // Send {comm, bytes, peer}
    case 10:  // Recv {comm, bytes, peer}
    case 17:  // Gather {comm, bytes, root}
    case 18:  // Scatter {comm, bytes, root}
    case 21:  // PutSignal {comm, bytes, peer, ctx}
      return 24;
    default:
      return 0;
  }
}

}  // namespace

std::optional<std::uint64_t> nccl_communicator_of(const nvtxEventAttributes_t* attributes) noexcept {
  if (attributes == nullptr || attributes->payloadType != NVTX_PAYLOAD_TYPE_EXT || attributes->reserved0 < 1) {
    return std::nullopt;
  }
  const auto* data = reinterpret_cast<const nvtxPayloadData_t*>(static_cast<std::uintptr_t>(attributes->payload.ullValue));
  if (data == nullptr || data->payload == nullptr) return std::nullopt;
  const std::size_t needed = payload_size_with_communicator(data->schemaId);
  // SIZE_MAX: "the tool should figure out the size", which NCCL never asks.
  if (needed == 0 || data->size < needed || data->size == SIZE_MAX) return std::nullopt;
  std::uint64_t communicator = 0;
  std::memcpy(&communicator, data->payload, sizeof communicator);
  if (communicator == 0) return std::nullopt;
  return communicator;
}

}  // namespace cudascope::profiler::detail
