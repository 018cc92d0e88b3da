#pragma once
// NCCL's NVTX ranges and the communicator they name.
//
// NCCL (2.25 on) pushes an NVTX range in the domain "NCCL" around each of its calls
// ("ncclAllReduce", ...), with an NVTX extended payload whose struct begins with the
// communicator's commHash (NCCL's src/include/nvtx_payload_schemas.h, "NCCL communicator
// ID"). The NVTX handlers write it as the range's uint64 payload, so an NCCL range in the
// trace carries args {"domain":"NCCL","payload":<commHash>}; the analysis names each
// communicator by it (analysis/collective_pairing.h). Within one communicator NCCL requires
// every rank to issue the same collectives in the same order, so (commHash, k-th collective on
// it) names one operation on every rank.
//
// NCCL (2.22 on) launches its kernels with the driver's cuLaunchKernelEx, which a session
// records only with the whole driver API: without it nothing in the trace ties an NCCL kernel
// to the call (and range) that launched it. So the CUPTI source writes a driver API record for
// each kernel launch made while the calling thread is inside an NCCL range that names a
// communicator: its correlation id is the kernel's, its times lie inside the range
// (cupti_source.cpp). The NVTX handlers tell it which thread is inside such a range.
//
// Grouped calls (ncclGroupStart ... ncclGroupEnd: coalesced collectives, batched sends and
// receives) launch their kernels inside the outermost ncclGroupEnd, whose range names no
// communicator. When every call of the group named the same one, the handlers give the
// ncclGroupEnd range that communicator as its payload, so its launches are recorded and its
// kernels pair on it; a group over several communicators, or with a call whose communicator
// cannot be read, names none. Groups of non-blocking communicators launch from NCCL's own
// thread, outside any range of the caller's: their kernels stay unpaired.

#include <nvtx3/nvToolsExt.h>

#include <cstdint>
#include <optional>

namespace cudascope::profiler::detail {

// The communicator hash in the extended payload of an NCCL call's range: the first 8 bytes of
// its first nvtxPayloadData_t, for a schema of NCCL's that has the communicator there and a
// payload at least that schema's size. nullopt for anything else: no attributes, another
// payload type, no entries (the count is carried in reserved0), null pointers, another schema,
// a payload too short (NCCL before 2.25 used the same schema ids with the message size first
// and no communicator, in a struct 8 bytes smaller), or a hash of 0 (NCCL's "no communicator").
// Pure: reads only what it is given.
std::optional<std::uint64_t> nccl_communicator_of(const nvtxEventAttributes_t* attributes) noexcept;

// The communicator of the NCCL range open on the calling thread (the NCCL call it is in);
// 0 when none is, or when that range names none. One thread-local load.
std::uint64_t nccl_communicator_on_this_thread() noexcept;

// Whether the NVTX domain "NCCL" has been created in this process: NCCL made its first call.
bool nccl_in_process() noexcept;

}  // namespace cudascope::profiler::detail
