#pragma once
// An open-addressing hash map from device pointer to Block*, for the allocation and free
// paths: no node allocations, linear probing, backward-shift deletion (no tombstones).
// Not thread-safe: the device lock guards it.

#include <cstddef>
#include <cstdint>
#include <vector>

namespace cudascope::cuda::detail::alloc {

template <typename V>
class PointerMap {
 public:
  PointerMap() { slots_.resize(64); }

  V* find(const void* key) const noexcept {
    const auto k = reinterpret_cast<std::uintptr_t>(key);
    for (std::size_t i = index(k);; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.key == k) return s.value;
      if (s.key == 0) return nullptr;
    }
  }

  void insert(const void* key, V* value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) grow();
    place(reinterpret_cast<std::uintptr_t>(key), value);
    ++size_;
  }

  // Removes `key`; returns its value, or nullptr when absent.
  V* erase(const void* key) noexcept {
    const auto k = reinterpret_cast<std::uintptr_t>(key);
    std::size_t i = index(k);
    for (;; i = (i + 1) & mask()) {
      if (slots_[i].key == k) break;
      if (slots_[i].key == 0) return nullptr;
    }
    V* value = slots_[i].value;
    // Shift later members of the probe run back so lookups never stop early.
    for (std::size_t j = (i + 1) & mask();; j = (j + 1) & mask()) {
      if (slots_[j].key == 0) break;
      const std::size_t home = index(slots_[j].key);
      const bool movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = Slot{};
    --size_;
    return value;
  }

  std::size_t size() const noexcept { return size_; }

  template <typename F>
  void for_each(F f) const {
    for (const Slot& s : slots_) {
      if (s.key != 0) f(s.value);
    }
  }

 private:
  struct Slot {
    std::uintptr_t key = 0;
    V* value = nullptr;
  };
  std::size_t mask() const noexcept { return slots_.size() - 1; }
  std::size_t index(std::uintptr_t k) const noexcept {
    // Fibonacci hashing: device pointers share their low bits (512-byte alignment).
    return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ULL) >> 17) & mask();
  }
  void place(std::uintptr_t k, V* v) noexcept {
    std::size_t i = index(k);
    while (slots_[i].key != 0) i = (i + 1) & mask();
    slots_[i] = Slot{k, v};
  }
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.key != 0) place(s.key, s.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t size_ = 0;
};

}  // namespace cudascope::cuda::detail::alloc
