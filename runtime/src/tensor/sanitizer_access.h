#pragma once
// A Tensor kernel's declaration to the stream sanitizer (sanitizer.h): which CUDA tensors it
// reads and writes, on the current stream of the device it runs on. Call it just before
// queueing the kernel; when the sanitizer is off it costs one relaxed load.

#include "../runtime_state.h"
#include "../sanitizer/hooks.h"
#include "storage.h"

#include <array>
#include <cstddef>
#include <initializer_list>

namespace cudascope::detail {

// One tensor argument; `name` nullptr for the kernel's output.
struct TensorOperand {
  const Tensor* tensor;
  const char* name;
};

inline const void* sanitized_storage(const Tensor& t) noexcept {
  const auto& storage = t.storage();
  return storage != nullptr && storage->is_device() ? storage->data() : nullptr;
}

// Out of line: reached only when the sanitizer is on.
[[gnu::noinline]] inline void declare_accesses_slow(const char* op, int device, std::initializer_list<TensorOperand> reads,
                                                    std::initializer_list<TensorOperand> writes) {
  using cuda::sanitizer::detail::Operand;
  constexpr std::size_t kMax = 8;
  std::array<Operand, kMax> r{}, w{};
  std::size_t nr = 0, nw = 0;
  for (const TensorOperand& o : reads) {
    if (nr < kMax) r[nr++] = Operand{sanitized_storage(*o.tensor), o.name};
  }
  for (const TensorOperand& o : writes) {
    if (nw < kMax) w[nw++] = Operand{sanitized_storage(*o.tensor), o.name};
  }
  const auto stream = cuda::detail::current_stream_of(device);
  cuda::sanitizer::detail::kernel_launch(op, device, stream.id, {r.data(), nr}, {w.data(), nw});
}

// `device` is the CUDA device whose current stream runs the kernel (CPU: nothing to check).
inline void declare_accesses(const char* op, const Device& device, std::initializer_list<TensorOperand> reads,
                             std::initializer_list<TensorOperand> writes) {
  if (!cuda::sanitizer::detail::active() || !device.is_cuda()) [[likely]] return;
  declare_accesses_slow(op, device.index, reads, writes);
}

}  // namespace cudascope::detail
