#pragma once
// NCCL's NVTX calls for the profiler's tests: event attributes as NCCL builds them, and a
// program's NVTX instance that calls the installed handlers.

#include "nvtx_message.h"

#include <cudascope/profiler/nvtx_injection.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <cstddef>
#include <cstdint>

namespace cudascope::profiler::testing {

constexpr std::uint64_t kNcclSchemaBase = std::uint64_t{1} << 24;  // NCCL's static schema ids
constexpr std::uint64_t kAllReduceSchema = kNcclSchemaBase + 5;
constexpr std::uint64_t kAllGatherSchema = kNcclSchemaBase + 4;

// NCCL 2.25's payload of ncclAllReduce (nvtx_payload_schemas.h: comm, bytes, op).
struct AllReducePayload {
  std::uint64_t comm;
  std::size_t bytes;
  int op;
};
// The same call's payload before 2.25: no communicator, the message size first.
struct OldAllReducePayload {
  std::size_t bytes;
  int op;
};

// An NCCL call's event attributes as NCCL builds them (nvtx3::event_attributes with one
// nvtxPayloadData_t: NVTX_PAYLOAD_TYPE_EXT, the entry count in reserved0).
struct NcclAttributes {
  NcclAttributes(std::uint64_t schema, const void* payload, std::size_t size) : data{schema, size, payload} {
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = "ncclAllReduce";
    attributes.payloadType = NVTX_PAYLOAD_TYPE_EXT;
    attributes.reserved0 = 1;
    attributes.payload.ullValue = reinterpret_cast<std::uintptr_t>(&data);
  }
  NcclAttributes(const NcclAttributes&) = delete;  // `attributes` points at `data`
  nvtxPayloadData_t data;
  nvtxEventAttributes_t attributes{};
};

// A program's NVTX instance, as far as install_nvtx_handlers uses it: an export table whose
// callbacks table hands out the CORE and CORE2 function slots the handlers are written into,
// and calls through those slots as the program's NVTX calls would. Installing replaces the
// process's handlers for good: each test runs in its own process (gtest_discover_tests).
class FakeNvtxInstance {
 public:
  FakeNvtxInstance() {
    for (unsigned i = 0; i < NVTX_CBID_CORE_SIZE; ++i) core_table_[i] = &core_[i];
    for (unsigned i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) core2_table_[i] = &core2_[i];
  }
  bool install() { return install_nvtx_handlers(&export_table) == 1; }

  nvtxDomainHandle_t create_domain(const char* name) const {
    return reinterpret_cast<nvtxDomainHandle_t (*)(const char*)>(core2_[NVTX_CBID_CORE2_DomainCreateA])(name);
  }
  void push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t& a) const {
    reinterpret_cast<int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(core2_[NVTX_CBID_CORE2_DomainRangePushEx])(
        domain, &a);
  }
  void pop(nvtxDomainHandle_t domain) const {
    reinterpret_cast<int (*)(nvtxDomainHandle_t)>(core2_[NVTX_CBID_CORE2_DomainRangePop])(domain);
  }
  nvtxStringHandle_t register_string(nvtxDomainHandle_t domain, const char* text) const {
    return reinterpret_cast<nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*)>(
        core2_[NVTX_CBID_CORE2_DomainRegisterStringA])(domain, text);
  }
  // A range with an ASCII message (`domain` null: the default domain, as torch.cuda.nvtx's).
  void push_message(nvtxDomainHandle_t domain, const char* message) const {
    push(domain, cudascope::testing::nvtx_message(message));
  }
  // The range NCCL_NVTX3_FUNC_RANGE pushes in `function` (ncclGroupStart, ncclGroupEnd): its
  // name as a registered string, no payload (also a call whose payload names no communicator).
  void push_registered(nvtxDomainHandle_t domain, const char* function) const {
    nvtxEventAttributes_t a{};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = register_string(domain, function);
    push(domain, a);
  }

 private:
  static int NVTX_API module_table(NvtxCallbackModule module, NvtxFunctionTable* table, unsigned* size) {
    if (module == NVTX_CB_MODULE_CORE) {
      *table = core_table_;
      *size = NVTX_CBID_CORE_SIZE;
      return 1;
    }
    if (module == NVTX_CB_MODULE_CORE2) {
      *table = core2_table_;
      *size = NVTX_CBID_CORE2_SIZE;
      return 1;
    }
    return 0;
  }
  static const void* export_table(std::uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &callbacks_ : nullptr; }

  static inline NvtxFunctionPointer core_[NVTX_CBID_CORE_SIZE] = {};
  static inline NvtxFunctionPointer core2_[NVTX_CBID_CORE2_SIZE] = {};
  static inline NvtxFunctionPointer* core_table_[NVTX_CBID_CORE_SIZE] = {};
  static inline NvtxFunctionPointer* core2_table_[NVTX_CBID_CORE2_SIZE] = {};
  static inline const NvtxExportTableCallbacks callbacks_{sizeof(NvtxExportTableCallbacks), &module_table};
};

}  // namespace cudascope::profiler::testing
