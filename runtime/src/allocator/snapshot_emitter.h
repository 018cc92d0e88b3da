#pragma once
// The snapshot's structure written once (emit_snapshot), for two encodings: JSON and
// pickle. An Emitter receives values in document order. Not thread-safe.

#include <cudascope/cuda/memory.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace cudascope::cuda::detail::alloc {

class Emitter {
 public:
  virtual ~Emitter() = default;
  virtual void begin_dict() = 0;
  virtual void end_dict() = 0;
  virtual void begin_list() = 0;
  virtual void end_list() = 0;
  virtual void key(std::string_view k) = 0;
  virtual void string(std::string_view s) = 0;
  virtual void integer(std::int64_t v) = 0;
  virtual void unsigned_integer(std::uint64_t v) = 0;
  virtual void real(double v) = 0;
  virtual void boolean(bool v) = 0;
  virtual void pair(std::int64_t a, std::int64_t b) = 0;  // a tuple in pickle, an array in JSON
};

// PyTorch's torch.cuda.memory._snapshot() dictionary, keys in PyTorch's order.
void emit_snapshot(const memory::Snapshot& snapshot, Emitter& out);

}  // namespace cudascope::cuda::detail::alloc
