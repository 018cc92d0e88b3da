// The entry points tools are loaded by. Each forwards to the InjectionAgent.
#include "injection_agent.h"

#include <cudascope/profiler/nvtx_injection.h>

extern "C" {

// CUDA_INJECTION64_PATH: the driver calls this during cuInit.
__attribute__((visibility("default"))) int InitializeInjection() {
  cudascope::inject::InjectionAgent::instance().attach_cupti();
  return 1;
}

// The sim backend calls this while it starts (it honours CUDA_INJECTION64_PATH as the driver
// does). Must not call back into the runtime: the backend is still being constructed.
__attribute__((visibility("default"))) int cudascope_sim_attach() {
  cudascope::inject::InjectionAgent::instance().attach_sim();
  return 1;
}

// NVTX_INJECTION64_PATH: each NVTX instance calls this on its first NVTX call.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void* (*get_export_table)(unsigned int)) {
  cudascope::inject::InjectionAgent::instance().ensure_started();
  return cudascope::profiler::install_nvtx_handlers(get_export_table);
}

// The same library, for each NVTX extension module an instance first uses (its module info).
__attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(void* module_info) {
  return cudascope::profiler::install_nvtx_extension_handlers(module_info);
}

}  // extern "C"
