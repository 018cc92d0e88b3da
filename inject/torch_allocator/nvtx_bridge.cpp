// NVTX_INJECTION64_PATH=libcudascope_torch_allocator.so: each NVTX instance of the process
// (torch.cuda.nvtx's among them) calls InitializeInjectionNvtx2 on its first NVTX call, and
// its range push/pop then reach the handlers here, which keep the thread's range stack in the
// runtime (cudascope::cuda::nvtx), where the allocator's history reads it for every
// allocation. The runtime's own NVTX instance is declined: its pushes are already on the
// stack, and our handler calling back into it would recurse.
#include "nvtx_bridge.h"
#include "torch_allocator.h"

#include <cudascope/cuda/nvtx.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/util/nvtx_payload_slots.h>

#include <nvtx3/nvToolsExt.h>

#include <dlfcn.h>

#include <cstring>
#include <mutex>
#include <string>

namespace cudascope::torch_allocator {
namespace detail {

std::atomic<bool> borrowing{false};

namespace {
std::atomic<bool> borrowing_set{false};  // by set_borrowing: the default no longer applies
std::mutex last_mutex;
std::shared_ptr<const std::vector<std::string>> last_ranges;
}  // namespace

std::shared_ptr<const std::vector<std::string>> ranges_of_last_thread() {
  std::lock_guard lock(last_mutex);
  return last_ranges;
}

// Called after every push and pop through the handlers: this thread's stack becomes the one
// threads without ranges borrow. A copy per NVTX range event, not per allocation.
void remember_this_thread() noexcept {
  try {
    auto ranges = std::make_shared<const std::vector<std::string>>(cuda::nvtx::range_stack());
    std::lock_guard lock(last_mutex);
    last_ranges = std::move(ranges);
  } catch (...) {
    // Out of host memory: the previous stack stays.
  }
}

}  // namespace detail

void set_borrowing(bool on) noexcept {
  detail::borrowing_set.store(true);
  detail::borrowing.store(on);
}

void start_borrowing_with_default_history() noexcept {
  try {
    if (!detail::borrowing_set.load() && cuda::memory::history_on_by_default()) detail::borrowing.store(true);
  } catch (...) {
    // Out of host memory reading the environment: no borrowing, as before.
  }
}

}  // namespace cudascope::torch_allocator

namespace {

namespace nvtx = cudascope::cuda::nvtx;
using cudascope::torch_allocator::detail::remember_this_thread;

std::string narrow(const wchar_t* text) {
  std::string out;
  for (; text != nullptr && *text != L'\0'; ++text) out += *text < 0x80 ? static_cast<char>(*text) : '?';
  return out;
}

std::string message_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return {};
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii == nullptr ? "" : a->message.ascii;
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      const char* text = reinterpret_cast<const char*>(a->message.registered);
      return text == nullptr ? "" : text;
    }
    case NVTX_MESSAGE_TYPE_UNICODE: return narrow(a->message.unicode);
    default: return {};
  }
}

// NVTX handlers must not throw.
int push(const char* message) noexcept {
  try {
    const int depth = nvtx::range_push(message == nullptr ? "" : message);
    remember_this_thread();
    return depth;
  } catch (...) {
    return -1;
  }
}

int pop_range() noexcept {
  const int depth = nvtx::range_pop();
  remember_this_thread();
  return depth;
}

int NVTX_API push_a(const char* message) { return push(message); }
int NVTX_API push_w(const wchar_t* message) { return push(narrow(message).c_str()); }
int NVTX_API push_ex(const nvtxEventAttributes_t* a) { return push(message_of(a).c_str()); }
int NVTX_API pop() { return pop_range(); }
int NVTX_API domain_push_ex(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) { return push(message_of(a).c_str()); }
int NVTX_API domain_pop(nvtxDomainHandle_t) { return pop_range(); }
// The payload extension's push and pop (util/nvtx_payload_slots.h): NCCL pops its init calls'
// ranges with nvtxRangePopPayload, which must leave the stack as the push found it.
int NVTX_API push_payload(nvtxDomainHandle_t, const nvtxPayloadData_t*, std::size_t) { return push(""); }
int NVTX_API pop_payload(nvtxDomainHandle_t, const nvtxPayloadData_t*, std::size_t) { return pop_range(); }
// Registered strings are handed back as their text, which message_of reads.
nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t, const char* text) {
  return reinterpret_cast<nvtxStringHandle_t>(strdup(text == nullptr ? "" : text));
}

// Whether `address` (an NVTX instance's export table, or its extension's function slots) is
// the runtime library's own instance.
bool from_the_runtime(const void* address) {
  Dl_info caller{}, runtime{};
  return dladdr(address, &caller) != 0 &&
         dladdr(reinterpret_cast<const void*>(&nvtx::range_stack), &runtime) != 0 &&
         caller.dli_fbase == runtime.dli_fbase;
}

template <typename Fn>
void set(NvtxFunctionTable table, unsigned size, unsigned index, Fn fn) {
  if (index < size && table[index] != nullptr) *table[index] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

bool install(NvtxExportTableCallbacks const* callbacks, NvtxCallbackModule module,
             void (*fill)(NvtxFunctionTable, unsigned)) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks->GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr) return false;
  fill(table, size);
  return true;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    const void* (*get_export_table)(unsigned int)) {
  if (get_export_table == nullptr || from_the_runtime(reinterpret_cast<const void*>(get_export_table))) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  const bool core = install(callbacks, NVTX_CB_MODULE_CORE, [](NvtxFunctionTable table, unsigned size) {
    set(table, size, NVTX_CBID_CORE_RangePushEx, &push_ex);
    set(table, size, NVTX_CBID_CORE_RangePushA, &push_a);
    set(table, size, NVTX_CBID_CORE_RangePushW, &push_w);
    set(table, size, NVTX_CBID_CORE_RangePop, &pop);
  });
  install(callbacks, NVTX_CB_MODULE_CORE2, [](NvtxFunctionTable table, unsigned size) {
    set(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
    set(table, size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    set(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string_a);
  });
  return core ? 1 : 0;
}

// The same library for each NVTX extension module an instance first uses: the payload
// extension's range push and pop join the thread's stack (the runtime's own instance, which
// never makes these calls, is left alone as above).
extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t* module) {
  if (module != nullptr && module->segmentsCount > 0 && module->segments != nullptr &&
      !from_the_runtime(module->segments[0].functionSlots)) {
    cudascope::util::fill_nvtx_payload_range_slots(module, {&push_payload, &pop_payload, nullptr, nullptr});
  }
  return 1;
}
