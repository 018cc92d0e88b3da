#pragma once
// The process-wide cache of compiled jiterator kernels, one per backend's kind of compiled
// code. Entries are never evicted (as torch's jiterator cache): their code may be running on
// a stream, and a kernel reference stays valid for the life of the process.
//
// Thread-safety: get() may be called from any thread. Lookups of compiled kernels take one
// short lock; compiles are serialised by a second lock, so a long compile delays other first
// calls but never the launches of kernels already compiled.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace cudascope::cuda::detail {

// Counts compiles for jiterator::compiled_kernel_count().
void note_jit_compile() noexcept;

template <typename Compiled>
class KernelCache {
 public:
  // The kernel compiled for `key`, compiling it with `compile` on first use (an exception
  // from compile leaves nothing cached, so the next call tries again).
  const Compiled& get(const std::string& key, const std::function<Compiled()>& compile) {
    if (const Compiled* found = find(key)) return *found;
    std::lock_guard compiling(compile_mutex_);
    if (const Compiled* found = find(key)) return *found;  // compiled while this thread waited
    auto compiled = std::make_unique<Compiled>(compile());
    note_jit_compile();
    std::lock_guard lock(mutex_);
    return *entries_.emplace(key, std::move(compiled)).first->second;
  }

 private:
  const Compiled* find(const std::string& key) {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second.get();
  }

  std::mutex compile_mutex_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Compiled>> entries_;
};

}  // namespace cudascope::cuda::detail
