#pragma once
// The cuBLAS workspaces, as torch's cublas_handle_stream_to_workspace: one block from the
// caching allocator per (handle, stream), allocated on that stream, kept until cleared.
// Thread-safety: thread-safe.

#include "../backend/backend.h"

#include <cstddef>
#include <map>
#include <shared_mutex>
#include <utility>

namespace cudascope::cuda::detail::blas {

class Workspaces {
 public:
  // The workspace of (handle, stream) on `device`, of at least `size` bytes: allocated (on the
  // current stream, which must be `stream`) when the pair has none or a smaller one.
  void* get(void* handle, int device, StreamHandle stream, std::size_t size);
  // Returns workspaces to the allocator: all of them, or those of one stream of one device.
  void clear();
  void clear_stream(int device, StreamHandle stream);

  std::pair<std::size_t, std::size_t> count_and_bytes(int device) const;

 private:
  struct Entry {
    int device;
    void* ptr;
    std::size_t size;
  };
  using Key = std::pair<void*, StreamHandle>;
  mutable std::shared_mutex mutex_;
  std::map<Key, Entry> entries_;
};

}  // namespace cudascope::cuda::detail::blas
