#pragma once
// NVTX injection: the handlers libcudascope_inject.so installs when a program's NVTX
// (nvtx3, PyTorch's torch.cuda.nvtx included) loads it from NVTX_INJECTION64_PATH. They
// record ranges (push/pop, start/end, per domain), marks, colours, categories, payloads and
// thread names into the calling thread's record buffer, while a Session records NVTX.

#include <cstdint>

namespace cudascope::profiler {

using NvtxExportTableGetter = const void* (*)(std::uint32_t export_table_id);

// Fills NVTX's callback tables with cudascope's handlers. Returns 1 on success, 0 when the
// NVTX version is too old to offer the callbacks table (NVTX then stays a no-op). Called
// once per NVTX instance in the process (each library with its own copy of nvtx3 calls it).
int install_nvtx_handlers(NvtxExportTableGetter get_export_table) noexcept;

// Fills the payload extension's function slots (nvToolsExtPayload.h) with handlers for its
// range calls, so that a range pushed or popped through them (NCCL pops its init calls'
// ranges with nvtxRangePopPayload) keeps the thread's ranges paired. `module_info` is the
// nvtxExtModuleInfo_t NVTX passes to InitializeInjectionNvtxExtension, once per extension
// module and instance; other modules are left as they are. Returns 1 (NVTX goes on either way).
int install_nvtx_extension_handlers(void* module_info) noexcept;

}  // namespace cudascope::profiler
