// torch.cuda.current_blas_handle (blas.h): the library for the backend, the handle pool, the
// workspaces and their size, and matmul on top of them.
#include "blas_library.h"
#include "handle_pool.h"
#include "workspaces.h"

#include "../check.h"
#include "../runtime_state.h"
#include "../tensor/sanitizer_access.h"
#include "../tensor/storage.h"

#include <cudascope/cuda/blas.h>
#include <cudascope/cuda/device.h>

#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <regex>
#include <string>
#include <unordered_map>

namespace cudascope::cuda {
namespace detail::blas {

BlasLibrary& library() {
  // Loaded under a lock rather than as a static object's initialiser, so that a failed load
  // (cuBLAS missing) throws again on every later call.
  static std::mutex mutex;
  static BlasLibrary* loaded = nullptr;
  std::lock_guard lock(mutex);
  if (loaded == nullptr) {
    Backend& backend = lazy_backend();
    auto made = std::string(backend.name()) == "sim" ? make_sim_blas_library(backend) : make_cublas_library(backend);
    loaded = made.release();  // handles outlive every owner: never unloaded
  }
  return *loaded;
}

namespace {

HandlePool& pool() {
  static auto* handles = new HandlePool([](int device) { return library().create(device); });
  return *handles;
}

Workspaces& workspaces() {
  static auto* all = new Workspaces();
  return *all;
}

// torch's default: 4096 KiB x 2 + 16 KiB x 8, or 4096 KiB x 8 on Hopper and Blackwell.
std::size_t default_workspace_size(int device) {
  const int major = get_device_properties(device).major;
  const bool use32mb = major == 9 || major == 10 || major == 11 || major == 12;
  return use32mb ? 4096u * 8 * 1024 : 4096u * 1024 * 2 + 16 * 1024 * 8;
}

std::size_t chosen_workspace_size(int device) {
  const std::size_t fallback = default_workspace_size(device);
  const char* config = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  if (config == nullptr) return fallback;
  if (const auto parsed = parse_cublas_workspace_config(config)) return *parsed;
  std::fprintf(stderr,
               "cudascope: could not parse CUBLAS_WORKSPACE_CONFIG='%s' (expected ':SIZE_KiB:COUNT' terms, e.g. "
               ":4096:8), using the default workspace size of %zu bytes\n",
               config, fallback);
  return fallback;
}

}  // namespace
}  // namespace detail::blas

using namespace detail::blas;

std::optional<std::size_t> parse_cublas_workspace_config(std::string_view config) {
  static const std::regex term(":([0-9]+):([0-9]+)");
  const std::string text(config);
  const auto too_large = [&](const std::string& what) {
    detail::throw_error(error_code::kInvalidValue, "CUBLAS_WORKSPACE_CONFIG", __FILE__, __LINE__,
                        "CUBLAS_WORKSPACE_CONFIG='" + text + "': " + what + " does not fit in 64 bits");
  };
  const auto number = [&](const std::string& digits) {
    std::uint64_t value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc() || end != digits.data() + digits.size()) too_large("the number " + digits);
    return value;
  };
  std::uint64_t total = 0;
  bool any = false;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), term); it != std::sregex_iterator(); ++it) {
    const std::string size_kib = (*it)[1].str(), count = (*it)[2].str();
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(number(size_kib), std::uint64_t{1024}, &bytes) ||
        __builtin_mul_overflow(bytes, number(count), &bytes)) {
      too_large("the term :" + size_kib + ":" + count + " (" + size_kib + " KiB x " + count + ")");
    }
    if (__builtin_add_overflow(total, bytes, &total)) too_large("the sum of the terms");
    any = true;
  }
  if (!any) return std::nullopt;
  return static_cast<std::size_t>(total);
}

std::size_t blas_workspace_size(int device) {
  const int index = detail::resolve_device(device);
  // Read once per device, as torch reads it once per process.
  static std::mutex mutex;
  static std::unordered_map<int, std::size_t> sizes;
  std::lock_guard lock(mutex);
  auto found = sizes.find(index);
  if (found == sizes.end()) found = sizes.emplace(index, chosen_workspace_size(index)).first;
  return found->second;
}

void* current_blas_handle() {
  const int device = current_device();
  // CUBLAS_WORKSPACE_CONFIG is checked before cuBLAS sees it: cublasCreate reads it too and
  // answers a value it cannot use with a bare allocation failure.
  const std::size_t size = blas_workspace_size(device);
  BlasLibrary& blas = library();
  void* handle = pool().reserve(device);
  const Stream stream = current_stream(device);
  // As torch: the stream first (which resets the workspace to cuBLAS's own), then ours.
  blas.set_stream(handle, stream.handle());
  blas.set_workspace(handle, workspaces().get(handle, device, stream.handle(), size), size);
  return handle;
}

void clear_blas_workspaces() { workspaces().clear(); }

void clear_blas_workspaces_for_stream(const Stream& stream) { workspaces().clear_stream(stream.device_index(), stream.handle()); }

BlasPoolStats blas_pool_stats(int device) {
  const int index = detail::resolve_device(device);
  BlasPoolStats stats;
  stats.handles_created = pool().created(index);
  stats.handles_available = pool().available(index);
  std::tie(stats.workspaces, stats.workspace_bytes) = workspaces().count_and_bytes(index);
  return stats;
}

}  // namespace cudascope::cuda

namespace cudascope {

Tensor matmul(const Tensor& a, const Tensor& b) {
  namespace cerr = cuda::error_code;
  CUDASCOPE_CHECK(a.defined() && b.defined() && a.is_cuda() && b.device() == a.device(), cerr::kInvalidValue, "matmul",
                  "both tensors must be on the same CUDA device (got " + a.device().str() + " and " + b.device().str() + ")");
  CUDASCOPE_CHECK(a.dtype() == DType::kFloat32 && b.dtype() == DType::kFloat32, cerr::kInvalidValue, "matmul",
                  std::string("float32 tensors only (got ") + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) + ")");
  CUDASCOPE_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), cerr::kInvalidValue, "matmul",
                  "needs m x k and k x n matrices (got " + std::to_string(a.dim()) + "-D and " + std::to_string(b.dim()) +
                      "-D, inner sizes " + std::to_string(a.dim() == 2 ? a.size(1) : -1) + " and " +
                      std::to_string(b.dim() == 2 ? b.size(0) : -1) + ")");
  constexpr std::int64_t kMaxDim = 0x7fffffff;  // cuBLAS's int dimensions
  CUDASCOPE_CHECK(a.size(0) <= kMaxDim && a.size(1) <= kMaxDim && b.size(1) <= kMaxDim, cerr::kInvalidValue, "matmul",
                  "a dimension exceeds cuBLAS's 32-bit sizes");
  const int device = a.device().index;
  cuda::DeviceGuard guard(device);
  const Tensor lhs = a.contiguous();
  const Tensor rhs = b.contiguous();
  const auto m = static_cast<int>(a.size(0)), k = static_cast<int>(a.size(1)), n = static_cast<int>(b.size(1));
  Tensor out = k == 0 ? zeros({m, n}, TensorOptions{}.with_device(a.device()))
                      : empty({m, n}, TensorOptions{}.with_device(a.device()));
  if (m == 0 || n == 0 || k == 0) return out;
  void* handle = cuda::current_blas_handle();
  cudascope::detail::declare_accesses("cudascope::matmul", a.device(), {{&lhs, "self"}, {&rhs, "other"}}, {{&out, nullptr}});
  cuda::detail::blas::library().sgemm_row_major(handle, m, n, k, lhs.data_ptr<float>(), rhs.data_ptr<float>(), out.data_ptr<float>());
  return out;
}

}  // namespace cudascope
