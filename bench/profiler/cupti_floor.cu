// The floor CUPTI itself sets on a launch-bound loop: the launch_loop program with nothing
// but CUPTI's own activity tracing, no cudascope code. Arguments, in any order after N:
//   concurrent   enable CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
//   kernel       enable CUPTI_ACTIVITY_KIND_KERNEL (serialises kernels)
//   launch       also CUPTI's runtime records of the launch call (launch -> kernel flows)
//   ts           give CUPTI a host clock callback (as cudascope does)
//   flush        a 200 ms periodic flush by CUPTI's worker (as cudascope does)
//   buffer=MiB   bytes per activity buffer (default 32 MiB, pre-touched, pooled)
//   kinds=A,B    further activity kinds, each alone or together, to tell what each costs per
//                launch: memcpy, memset, sync, memory2, overhead, extcorr (external
//                correlation), device, context, driver, runtime
//   toggle       enable CONCURRENT_KERNEL (and the kinds= list) for the warm-up launches and
//                disable them again before the loop (what kinds switched off by a sampler
//                leave behind)
//   counter      a CUPTI callback on each launch call counting launches (cuptiSubscribe), no
//                activity record needed
// With none of these it is the plain loop. Prints one JSON line: launches, seconds for the
// loop, kernel records CUPTI delivered, records it dropped, launches the callback counted.
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

__global__ void tiny_kernel() {}

#define CHECK(call)                                                                            \
  do {                                                                                         \
    cudaError_t e = (call);                                                                    \
    if (e != cudaSuccess) {                                                                    \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e));                   \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)
#define CUPTI(call)                                                                            \
  do {                                                                                         \
    CUptiResult r = (call);                                                                    \
    if (r != CUPTI_SUCCESS) {                                                                  \
      const char* text = nullptr;                                                              \
      cuptiGetResultString(r, &text);                                                          \
      std::fprintf(stderr, "%s failed: %s\n", #call, text);                                    \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

namespace {
std::size_t buffer_bytes = 32u << 20;
std::mutex pool_mutex;
std::vector<std::uint8_t*> pool;
std::atomic<std::uint64_t> kernels{0}, dropped{0}, requests{0}, counted{0};

std::uint8_t* new_buffer() {
  auto* b = static_cast<std::uint8_t*>(std::aligned_alloc(8, buffer_bytes));
  std::memset(b, 0, buffer_bytes);  // touched now, not while CUPTI writes records
  return b;
}

void CUPTIAPI requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  requests.fetch_add(1);
  {
    std::lock_guard lock(pool_mutex);
    if (!pool.empty()) {
      *buffer = pool.back();
      pool.pop_back();
    } else {
      *buffer = new_buffer();
    }
  }
  *size = buffer_bytes;
  *max_records = 0;
}

void CUPTIAPI completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer, std::size_t, std::size_t valid) {
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) kernels.fetch_add(1);
  }
  std::size_t n = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &n) == CUPTI_SUCCESS) dropped.fetch_add(n);
  std::lock_guard lock(pool_mutex);
  pool.push_back(buffer);
}

std::uint64_t host_clock() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<std::uint64_t>(ts.tv_nsec);
}
void CUPTIAPI count_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  if (static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_ENTER) counted.fetch_add(1, std::memory_order_relaxed);
}

CUpti_ActivityKind kind_named(const std::string& name) {
  static const std::pair<const char*, CUpti_ActivityKind> kinds[] = {
      {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},     {"memset", CUPTI_ACTIVITY_KIND_MEMSET},
      {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION}, {"memory2", CUPTI_ACTIVITY_KIND_MEMORY2},
      {"overhead", CUPTI_ACTIVITY_KIND_OVERHEAD}, {"extcorr", CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION},
      {"device", CUPTI_ACTIVITY_KIND_DEVICE},     {"context", CUPTI_ACTIVITY_KIND_CONTEXT},
      {"driver", CUPTI_ACTIVITY_KIND_DRIVER},     {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME}};
  for (const auto& [n, kind] : kinds) {
    if (name == n) return kind;
  }
  std::fprintf(stderr, "cupti_floor: unknown kind '%s'\n", name.c_str());
  std::exit(2);
}

std::vector<CUpti_ActivityKind> kinds_in(const std::string& list) {
  std::vector<CUpti_ActivityKind> out;
  for (std::size_t at = 0; at <= list.size();) {
    const std::size_t comma = std::min(list.find(',', at), list.size());
    if (comma > at) out.push_back(kind_named(list.substr(at, comma - at)));
    at = comma + 1;
  }
  return out;
}

void subscribe_launch_counter() {
  CUpti_SubscriberHandle subscriber = nullptr;
  CUPTI(cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(&count_launch), nullptr));
  CUPTI(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
  CUPTI(cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000));
}
}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 20000;
  bool concurrent = false, serial = false, launch = false, ts = false, flush = false, toggle = false, counter = false;
  std::vector<CUpti_ActivityKind> kinds;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    concurrent |= a == "concurrent";
    serial |= a == "kernel";
    launch |= a == "launch";
    ts |= a == "ts";
    flush |= a == "flush";
    toggle |= a == "toggle";
    counter |= a == "counter";
    if (a.rfind("kinds=", 0) == 0) kinds = kinds_in(a.substr(6));
    if (a.rfind("buffer=", 0) == 0) buffer_bytes = std::strtoull(a.c_str() + 7, nullptr, 10) << 20;
  }
  const bool tracing = concurrent || serial || toggle || !kinds.empty();
  if (tracing) {
    for (int i = 0; i < 4; ++i) pool.push_back(new_buffer());
    if (ts) CUPTI(cuptiActivityRegisterTimestampCallback(&host_clock));
    CUPTI(cuptiActivityRegisterCallbacks(&requested, &completed));
    if (concurrent || serial || toggle) CUPTI(cuptiActivityEnable(serial ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    for (CUpti_ActivityKind kind : kinds) CUPTI(cuptiActivityEnable(kind));
    if (launch) {
      // CUDA 13 compiles <<<>>> into __cudaLaunchKernel; older code calls cudaLaunchKernel.
      CUPTI(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1));
      CUPTI(cuptiActivityEnableRuntimeApi(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, 1));
    }
    if (flush) CUPTI(cuptiActivityFlushPeriod(200));
  }
  if (counter) subscribe_launch_counter();
  for (int i = 0; i < 1000; ++i) tiny_kernel<<<1, 1>>>();
  CHECK(cudaDeviceSynchronize());
  if (toggle) {
    CUPTI(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    for (CUpti_ActivityKind kind : kinds) CUPTI(cuptiActivityDisable(kind));
  }
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) tiny_kernel<<<1, 1>>>();
  CHECK(cudaDeviceSynchronize());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (tracing) CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  std::printf("{\"launches\":%ld,\"seconds\":%.6f,\"kernel_records\":%llu,\"dropped\":%llu,\"buffer_requests\":%llu,"
              "\"counted_launches\":%llu}\n",
              n, seconds, static_cast<unsigned long long>(kernels.load()), static_cast<unsigned long long>(dropped.load()),
              static_cast<unsigned long long>(requests.load()), static_cast<unsigned long long>(counted.load()));
  return 0;
}
