#pragma once
// Per tensor (storage), the accesses that matter for the next check (CSAN's TensorInfo): the
// last write, and the reads since it. A record holds raw frames; they are symbolised only for
// a report. Not thread-safe: the sanitizer's lock guards it.

#include "../allocator/history.h"
#include "stream_clocks.h"

#include <cudascope/cuda/sanitizer.h>

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace cudascope::cuda::sanitizer::detail {

namespace alloc = cuda::detail::alloc;  // the allocator history's stack capture

struct AccessRecord {
  Access::Type type;
  std::uint64_t seq_num;
  StreamKey stream;
  const char* op;
  std::vector<const char*> arguments;
  bool is_output;
  alloc::ContextPtr stack;
};

struct TensorHistory {
  alloc::ContextPtr allocation_stack;  // null: allocated before enable (backfilled)
  std::optional<AccessRecord> write;
  std::vector<AccessRecord> reads;  // since the last write
};

class TensorAccesses {
 public:
  // A fresh history (an allocation; any history left at this address is dropped).
  void allocated(std::uintptr_t data, alloc::ContextPtr stack) { tensors_[data] = TensorHistory{std::move(stack), {}, {}}; }
  void freed(std::uintptr_t data) { tensors_.erase(data); }
  // The history of `data`, made empty when it was never seen (CSAN's backfill).
  TensorHistory& at(std::uintptr_t data) { return tensors_[data]; }

  void add_read(std::uintptr_t data, AccessRecord access) { tensors_[data].reads.push_back(std::move(access)); }
  void set_write(std::uintptr_t data, AccessRecord access) {
    TensorHistory& history = tensors_[data];
    history.write = std::move(access);
    history.reads.clear();
  }
  std::size_t size() const noexcept { return tensors_.size(); }

 private:
  std::unordered_map<std::uintptr_t, TensorHistory> tensors_;
};

}  // namespace cudascope::cuda::sanitizer::detail
