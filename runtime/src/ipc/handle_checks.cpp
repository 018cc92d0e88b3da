#include "handle_checks.h"

#include "ref_counters.h"

#include "../check.h"

#include <cstdint>
#include <limits>
#include <string>

namespace cudascope::cuda::detail::ipc {
namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw_error(error_code::kInvalidValue, "open_shared_tensor", __FILE__, __LINE__, "bad handle: " + what);
}

std::string indexed(const char* list, std::size_t i) { return std::string(list) + "[" + std::to_string(i) + "]"; }

bool known_dtype(DType dtype) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64, DType::kInt32, DType::kUInt8,
                  DType::kBool}) {
    if (dtype == d) return true;
  }
  return false;
}

void check_view_shape(const SharedTensorHandle& h) {
  if (h.sizes.size() != h.strides.size()) {
    invalid("sizes has " + std::to_string(h.sizes.size()) + " dimensions, strides " + std::to_string(h.strides.size()));
  }
  for (std::size_t d = 0; d < h.sizes.size(); ++d) {
    if (h.sizes[d] < 0) invalid(indexed("sizes", d) + " is " + std::to_string(h.sizes[d]) + ", a size cannot be negative");
    if (h.strides[d] < 0) {
      invalid(indexed("strides", d) + " is " + std::to_string(h.strides[d]) + ", a stride cannot be negative");
    }
  }
  if (h.storage_offset < 0) invalid("storage_offset is " + std::to_string(h.storage_offset) + ", it cannot be negative");
}

// The bytes from the storage's start to the end of the view's last element (0 when empty),
// refusing any step that overflows.
std::uint64_t view_end_bytes(const SharedTensorHandle& h) {
  std::int64_t numel = 1;
  for (std::size_t d = 0; d < h.sizes.size(); ++d) {
    if (__builtin_mul_overflow(numel, h.sizes[d], &numel)) invalid("the element count of sizes overflows 64 bits");
  }
  if (numel == 0) return 0;
  std::int64_t last = h.storage_offset;
  for (std::size_t d = 0; d < h.sizes.size(); ++d) {
    std::int64_t step = 0;
    if (__builtin_mul_overflow(h.sizes[d] - 1, h.strides[d], &step) || __builtin_add_overflow(last, step, &last)) {
      invalid("the view's last element (" + indexed("sizes", d) + " " + std::to_string(h.sizes[d]) + " x " +
              indexed("strides", d) + " " + std::to_string(h.strides[d]) + ") overflows 64 bits");
    }
  }
  std::uint64_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::uint64_t>(last) + 1, element_size(h.dtype), &bytes)) {
    invalid("the view's extent in bytes overflows 64 bits");
  }
  return bytes;
}

void check_storage_in_segment(const SharedTensorHandle& h) {
  if (h.segment_size_bytes == 0) invalid("segment_size_bytes is 0");
  std::uint64_t storage_end = 0;
  if (__builtin_add_overflow(h.storage_offset_bytes, h.storage_size_bytes, &storage_end) ||
      storage_end > h.segment_size_bytes) {
    invalid("the storage (storage_offset_bytes " + std::to_string(h.storage_offset_bytes) + " + storage_size_bytes " +
            std::to_string(h.storage_size_bytes) + ") reaches past the segment of segment_size_bytes " +
            std::to_string(h.segment_size_bytes));
  }
}

// The producer's counters are POSIX shared-memory names "/name" (ref_counters.cpp).
void check_counter(const SharedTensorHandle& h) {
  const std::string& name = h.ref_counter_handle;
  if (name.size() < 2 || name.size() > 255 || name[0] != '/' || name.find('/', 1) != std::string::npos) {
    invalid("ref_counter '" + name + "' is not a shared-memory name ('/' then up to 254 characters, no other '/')");
  }
  if (h.ref_counter_offset >= kSlots) {
    invalid("ref_counter_offset " + std::to_string(h.ref_counter_offset) + " is past the counters file's " +
            std::to_string(kSlots) + " slots");
  }
}

}  // namespace

void check_handle(const SharedTensorHandle& h) {
  if (h.device < 0) invalid("device is " + std::to_string(h.device) + ", not a device index");
  if (!known_dtype(h.dtype)) invalid("dtype " + std::to_string(static_cast<int>(h.dtype)) + " is not a known dtype");
  check_view_shape(h);
  const std::uint64_t view_end = view_end_bytes(h);
  if (view_end > h.storage_size_bytes) {
    invalid("the view reaches " + std::to_string(view_end) + " bytes into its storage of storage_size_bytes " +
            std::to_string(h.storage_size_bytes));
  }
  check_storage_in_segment(h);
  check_counter(h);
}

}  // namespace cudascope::cuda::detail::ipc
