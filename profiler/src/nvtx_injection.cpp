// NVTX injection handlers. Hot path: each handler is a flag test, a timestamp and one
// record (plus kText records for messages longer than fits inline).
#include <cudascope/profiler/nvtx_injection.h>

#include "device_source.h"
#include "nccl_nvtx.h"
#include "nvtx_emit.h"
#include "recording_state.h"
#include "runtime_source.h"

#include <cudascope/cuda/instrumentation.h>
#include <cudascope/profiler/record_buffers.h>
#include <cudascope/profiler/strings.h>
#include <cudascope/util/nvtx_payload_slots.h>

#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtPayload.h>

#include <atomic>
#include <cstring>
#include <cwchar>
#include <optional>
#include <string>

namespace cudascope::profiler {
namespace detail {
namespace {

std::atomic<bool> handlers_installed{false};
std::atomic<std::uint64_t> next_range_id{1};
[[gnu::tls_model("initial-exec")]] thread_local int push_depth = 0;
// The communicator of the NCCL range open on this thread (nccl_nvtx.h). Set by every push in
// the NCCL domain (0 for a range naming none) and cleared by its pop (nvtxDomainRangePop, or
// nvtxRangePopPayload, with which NCCL ends its init ranges): NCCL's ranges that name a
// communicator do not nest.
[[gnu::tls_model("initial-exec")]] thread_local std::uint64_t nccl_communicator_open = 0;
// NCCL's group calls on this thread (ncclGroupStart ... ncclGroupEnd, which nest): the group's
// calls only enqueue, and the outermost ncclGroupEnd launches their kernels inside its own
// range, which names no communicator. While the calls of a group name one communicator, the
// group is on it: its end's range is given that communicator, as a call's would be, so its
// launches are recorded and its kernels pair on it. A group of several communicators names
// none (its kernels stay unpaired).
struct NcclGroup {
  int depth = 0;
  std::uint64_t communicator = 0;
  bool several = false;
};
[[gnu::tls_model("initial-exec")]] thread_local NcclGroup nccl_group;
std::atomic<bool> nccl_domain_created{false};

std::uint64_t now() noexcept { return cuda::instrumentation::host_time_ns(); }

std::string narrow(const wchar_t* text) {
  std::string out;
  for (; text != nullptr && *text != L'\0'; ++text) out += *text < 0x80 ? static_cast<char>(*text) : '?';
  return out;
}

std::int64_t domain_id(nvtxDomainHandle_t domain) noexcept {
  return static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(domain));
}

NvtxAttributes attributes_of(const nvtxEventAttributes_t* a) noexcept {
  NvtxAttributes out;
  if (a == nullptr) return out;
  out.category = a->category;
  if (a->colorType == NVTX_COLOR_ARGB) {
    out.has_color = true;
    out.color = a->color;
  }
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64: out.payload_kind = NvtxPayloadKind::kUint64; out.payload = a->payload.ullValue; break;
    case NVTX_PAYLOAD_TYPE_INT64: out.payload_kind = NvtxPayloadKind::kInt64; std::memcpy(&out.payload, &a->payload.llValue, 8); break;
    case NVTX_PAYLOAD_TYPE_DOUBLE: out.payload_kind = NvtxPayloadKind::kDouble; std::memcpy(&out.payload, &a->payload.dValue, 8); break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32: out.payload_kind = NvtxPayloadKind::kUint32; out.payload = a->payload.uiValue; break;
    case NVTX_PAYLOAD_TYPE_INT32: out.payload_kind = NvtxPayloadKind::kInt32; out.payload = static_cast<std::uint32_t>(a->payload.iValue); break;
    case NVTX_PAYLOAD_TYPE_FLOAT: out.payload_kind = NvtxPayloadKind::kFloat; std::memcpy(&out.payload, &a->payload.fValue, 4); break;
    default: break;
  }
  return out;
}

// Emits a record carrying the event's message, whatever its type.
void emit_with_message(RecordKind kind, const nvtxEventAttributes_t* a, std::int64_t domain, std::uint64_t range_id,
                       const NvtxAttributes& attributes) {
  const char* text = nullptr;
  std::string converted;
  if (a != nullptr) {
    switch (a->messageType) {
      case NVTX_MESSAGE_TYPE_ASCII: text = a->message.ascii; break;
      case NVTX_MESSAGE_TYPE_REGISTERED: text = reinterpret_cast<const char*>(a->message.registered); break;
      case NVTX_MESSAGE_TYPE_UNICODE: converted = narrow(a->message.unicode); text = converted.c_str(); break;
      default: break;
    }
  }
  emit_nvtx_with_text(kind, text, text == nullptr ? 0 : std::strlen(text), domain, range_id, now(), attributes);
}

void emit_with_message(RecordKind kind, const nvtxEventAttributes_t* a, std::int64_t domain, std::uint64_t range_id) {
  emit_with_message(kind, a, domain, range_id, attributes_of(a));
}

void emit_ascii(RecordKind kind, const char* message, std::int64_t domain, std::uint64_t range_id) {
  emit_nvtx_with_text(kind, message, message == nullptr ? 0 : std::strlen(message), domain, range_id, now(), {});
}

// Core (default domain).
void NVTX_API mark_a(const char* message) {
  if (nvtx_recording()) emit_ascii(RecordKind::kNvtxMark, message, 0, 0);
}
void NVTX_API mark_w(const wchar_t* message) {
  if (nvtx_recording()) emit_ascii(RecordKind::kNvtxMark, narrow(message).c_str(), 0, 0);
}
void NVTX_API mark_ex(const nvtxEventAttributes_t* a) {
  if (nvtx_recording()) emit_with_message(RecordKind::kNvtxMark, a, 0, 0);
}
int NVTX_API push_a(const char* message) {
  if (nvtx_recording()) emit_ascii(RecordKind::kNvtxPush, message, 0, 0);
  return push_depth++;
}
int NVTX_API push_w(const wchar_t* message) {
  if (nvtx_recording()) emit_ascii(RecordKind::kNvtxPush, narrow(message).c_str(), 0, 0);
  return push_depth++;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  if (nvtx_recording()) emit_with_message(RecordKind::kNvtxPush, a, 0, 0);
  return push_depth++;
}
int NVTX_API pop() {
  if (push_depth == 0) return -1;
  if (nvtx_recording()) emit_nvtx_end(RecordKind::kNvtxPop, 0, 0, now());
  return --push_depth;
}
nvtxRangeId_t NVTX_API start_a(const char* message) {
  const std::uint64_t id = next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (nvtx_recording()) emit_ascii(RecordKind::kNvtxRangeStart, message, 0, id);
  return id;
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* message) {
  const std::uint64_t id = next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (nvtx_recording()) emit_ascii(RecordKind::kNvtxRangeStart, narrow(message).c_str(), 0, id);
  return id;
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  const std::uint64_t id = next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (nvtx_recording()) emit_with_message(RecordKind::kNvtxRangeStart, a, 0, id);
  return id;
}
void NVTX_API end(nvtxRangeId_t id) {
  if (nvtx_recording()) emit_nvtx_end(RecordKind::kNvtxRangeEnd, 0, id, now());
}
void NVTX_API name_os_thread_a(std::uint32_t thread_id, const char* name) {
  Record r = make_record(RecordKind::kThreadName);
  r.thread_id = thread_id;
  r.start_ns = r.end_ns = now();
  r.u.thread_name.name = intern(name == nullptr ? "" : name);
  RecordBuffers::process().emit(r);
}
void NVTX_API name_category_a(std::uint32_t, const char*) {}

// Domains: a domain handle is its interned name, a registered string handle its interned text.
// So NCCL's domain is the one whose handle is the interned "NCCL": one comparison a push.
nvtxDomainHandle_t nccl_domain() {
  static const nvtxDomainHandle_t handle = reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(intern("NCCL")));
  return handle;
}
nvtxDomainHandle_t NVTX_API domain_create_a(const char* name) {
  auto* domain = reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(intern(name == nullptr ? "" : name)));
  if (domain == nccl_domain() && !nccl_domain_created.exchange(true)) on_nccl_in_process();
  return domain;
}
nvtxDomainHandle_t NVTX_API domain_create_w(const wchar_t* name) { return domain_create_a(narrow(name).c_str()); }
void NVTX_API domain_destroy(nvtxDomainHandle_t) {}
nvtxStringHandle_t NVTX_API register_string_a(nvtxDomainHandle_t, const char* text) {
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(intern(text == nullptr ? "" : text)));
}
nvtxStringHandle_t NVTX_API register_string_w(nvtxDomainHandle_t domain, const wchar_t* text) {
  return register_string_a(domain, narrow(text).c_str());
}
void NVTX_API domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  if (nvtx_recording()) emit_with_message(RecordKind::kNvtxMark, a, domain_id(domain), 0);
}
// The text of an ASCII or registered message (a registered string is its interned text).
const char* message_text(const nvtxEventAttributes_t* a) noexcept {
  if (a == nullptr) return nullptr;
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return a->message.ascii;
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) return reinterpret_cast<const char*>(a->message.registered);
  return nullptr;
}

// Follows NCCL's groups through the ranges of its calls (NcclGroup); the communicator of the
// range of an outermost ncclGroupEnd whose group was on one.
std::optional<std::uint64_t> follow_nccl_group(const nvtxEventAttributes_t* a,
                                               std::optional<std::uint64_t> communicator) noexcept {
  if (communicator) {
    if (nccl_group.depth > 0 && nccl_group.communicator == 0) nccl_group.communicator = *communicator;
    nccl_group.several |= nccl_group.depth > 0 && nccl_group.communicator != *communicator;
    return communicator;
  }
  const char* name = message_text(a);
  if (name == nullptr) return std::nullopt;
  if (std::strcmp(name, "ncclGroupStart") == 0) {
    if (nccl_group.depth++ == 0) nccl_group = {1, 0, false};
  } else if (std::strcmp(name, "ncclGroupEnd") == 0) {
    if (nccl_group.depth > 0 && --nccl_group.depth == 0 && !nccl_group.several && nccl_group.communicator != 0)
      return nccl_group.communicator;
  } else if (nccl_group.depth > 0) {
    // A call of the group whose communicator cannot be read (a schema or an NCCL release
    // without it): the group may span another communicator, so it names none.
    nccl_group.several = true;
  }
  return std::nullopt;
}

// An NCCL call's range: its communicator becomes the range's payload (nccl_nvtx.h).
int push_nccl_range(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  const std::optional<std::uint64_t> communicator = follow_nccl_group(a, nccl_communicator_of(a));
  nccl_communicator_open = communicator.value_or(0);
  if (nvtx_recording()) {
    NvtxAttributes attributes = attributes_of(a);
    if (communicator) {
      attributes.payload_kind = NvtxPayloadKind::kUint64;
      attributes.payload = *communicator;
    }
    emit_with_message(RecordKind::kNvtxPush, a, domain_id(domain), 0, attributes);
  }
  return push_depth++;
}
int NVTX_API domain_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  if (domain == nccl_domain()) return push_nccl_range(domain, a);
  if (nvtx_recording()) emit_with_message(RecordKind::kNvtxPush, a, domain_id(domain), 0);
  return push_depth++;
}
int NVTX_API domain_pop(nvtxDomainHandle_t domain) {
  if (domain == nccl_domain()) nccl_communicator_open = 0;
  if (push_depth == 0) return -1;
  if (nvtx_recording()) emit_nvtx_end(RecordKind::kNvtxPop, domain_id(domain), 0, now());
  return --push_depth;
}
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  const std::uint64_t id = next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (nvtx_recording()) emit_with_message(RecordKind::kNvtxRangeStart, a, domain_id(domain), id);
  return id;
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) {
  if (nvtx_recording()) emit_nvtx_end(RecordKind::kNvtxRangeEnd, 0, id, now());
}
// NVTX's payload extension (nvToolsExtPayload.h): ranges whose attributes come in payloads
// of registered schemas. NCCL pushes its init calls' ranges with nvtxDomainRangePushEx and
// pops them with nvtxRangePopPayload; a pop not seen here left that range open on its thread,
// so the program's next pop (its training step's) closed it instead, and every later range of
// the thread nested in that step. The payloads are not decoded (their schemas are registered
// through calls not handled here): a range pushed with one is named after its domain.
const char* domain_name(nvtxDomainHandle_t domain) noexcept {
  return domain == nullptr ? "" : reinterpret_cast<const char*>(domain);  // interned, as domain_create_a made it
}
int NVTX_API push_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t*, std::size_t) {
  if (domain == nccl_domain()) nccl_communicator_open = 0;  // a range naming no communicator
  if (nvtx_recording()) emit_ascii(RecordKind::kNvtxPush, domain_name(domain), domain_id(domain), 0);
  return push_depth++;
}
int NVTX_API pop_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t*, std::size_t) { return domain_pop(domain); }
nvtxRangeId_t NVTX_API start_payload(nvtxDomainHandle_t domain, const nvtxPayloadData_t*, std::size_t) {
  const std::uint64_t id = next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (nvtx_recording()) emit_ascii(RecordKind::kNvtxRangeStart, domain_name(domain), domain_id(domain), id);
  return id;
}
void NVTX_API end_payload(nvtxDomainHandle_t domain, nvtxRangeId_t id, const nvtxPayloadData_t*, std::size_t) {
  domain_end(domain, id);
}
void NVTX_API domain_name_category_a(nvtxDomainHandle_t, std::uint32_t, const char*) {}
void NVTX_API initialize(const void*) {}

template <typename Fn>
void set(NvtxFunctionTable table, unsigned size, unsigned index, Fn fn) {
  if (index < size && table[index] != nullptr) *table[index] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

bool nvtx_injection_active() noexcept { return handlers_installed.load(std::memory_order_relaxed); }
std::uint64_t nccl_communicator_on_this_thread() noexcept { return nccl_communicator_open; }
bool nccl_in_process() noexcept { return nccl_domain_created.load(); }

}  // namespace detail

int install_nvtx_handlers(NvtxExportTableGetter get_export_table) noexcept {
  using namespace detail;
  if (get_export_table == nullptr) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) == 0 || table == nullptr) return 0;
  set(table, size, NVTX_CBID_CORE_MarkEx, &mark_ex);
  set(table, size, NVTX_CBID_CORE_MarkA, &mark_a);
  set(table, size, NVTX_CBID_CORE_MarkW, &mark_w);
  set(table, size, NVTX_CBID_CORE_RangeStartEx, &start_ex);
  set(table, size, NVTX_CBID_CORE_RangeStartA, &start_a);
  set(table, size, NVTX_CBID_CORE_RangeStartW, &start_w);
  set(table, size, NVTX_CBID_CORE_RangeEnd, &end);
  set(table, size, NVTX_CBID_CORE_RangePushEx, &push_ex);
  set(table, size, NVTX_CBID_CORE_RangePushA, &push_a);
  set(table, size, NVTX_CBID_CORE_RangePushW, &push_w);
  set(table, size, NVTX_CBID_CORE_RangePop, &pop);
  set(table, size, NVTX_CBID_CORE_NameCategoryA, &name_category_a);
  set(table, size, NVTX_CBID_CORE_NameOsThreadA, &name_os_thread_a);
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) != 0 && table != nullptr) {
    set(table, size, NVTX_CBID_CORE2_DomainMarkEx, &domain_mark_ex);
    set(table, size, NVTX_CBID_CORE2_DomainRangeStartEx, &domain_start_ex);
    set(table, size, NVTX_CBID_CORE2_DomainRangeEnd, &domain_end);
    set(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &domain_push_ex);
    set(table, size, NVTX_CBID_CORE2_DomainRangePop, &domain_pop);
    set(table, size, NVTX_CBID_CORE2_DomainNameCategoryA, &domain_name_category_a);
    set(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string_a);
    set(table, size, NVTX_CBID_CORE2_DomainRegisterStringW, &register_string_w);
    set(table, size, NVTX_CBID_CORE2_DomainCreateA, &domain_create_a);
    set(table, size, NVTX_CBID_CORE2_DomainCreateW, &domain_create_w);
    set(table, size, NVTX_CBID_CORE2_DomainDestroy, &domain_destroy);
    set(table, size, NVTX_CBID_CORE2_Initialize, &initialize);
  }
  handlers_installed.store(true);
  return 1;
}

int install_nvtx_extension_handlers(void* module_info) noexcept {
  using namespace detail;
  util::fill_nvtx_payload_range_slots(static_cast<const nvtxExtModuleInfo_t*>(module_info),
                                      {&push_payload, &pop_payload, &start_payload, &end_payload});
  return 1;
}

}  // namespace cudascope::profiler
