#pragma once
// Philox-4x32-10 on the host, bit for bit what cuRAND's curandStatePhilox4_32_10_t produces on
// the device (curand_init(seed, subsequence, offset) then curand4 / curand_uniform4 /
// curand_normal4), so the sim backend generates the numbers a GPU does.
//
// Constants are Philox's published multipliers and Weyl key increments (Salmon et al., SC'11).

#include <array>
#include <cmath>
#include <cstdint>

namespace cudascope::cuda::detail::philox {

using Counter = std::array<std::uint32_t, 4>;
using Key = std::array<std::uint32_t, 2>;

inline constexpr std::uint32_t kMul0 = 0xD2511F53u;
inline constexpr std::uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr std::uint32_t kWeyl0 = 0x9E3779B9u;
inline constexpr std::uint32_t kWeyl1 = 0xBB67AE85u;

inline Counter round(const Counter& c, const Key& k) noexcept {
  const std::uint64_t p0 = static_cast<std::uint64_t>(kMul0) * c[0];
  const std::uint64_t p1 = static_cast<std::uint64_t>(kMul1) * c[2];
  const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
  const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
  return {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
}

inline Counter philox10(Counter c, Key k) noexcept {
  for (int i = 0; i < 9; ++i) {
    c = round(c, k);
    k[0] += kWeyl0;
    k[1] += kWeyl1;
  }
  return round(c, k);
}

// One thread's generator: curand_init(seed, subsequence, offset) with offset a multiple of 4
// (torch only hands out such offsets), then one curand4 per next().
class Stream4 {
 public:
  Stream4(std::uint64_t seed, std::uint64_t subsequence, std::uint64_t offset) noexcept
      : key_{static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32)} {
    counter_[2] = static_cast<std::uint32_t>(subsequence);
    counter_[3] = static_cast<std::uint32_t>(subsequence >> 32);
    advance(offset / 4);
  }
  Counter next() noexcept {
    const Counter out = philox10(counter_, key_);
    advance(1);
    return out;
  }

 private:
  // cuRAND's Philox_State_Incr: a 128-bit add of n to the counter.
  void advance(std::uint64_t n) noexcept {
    const auto lo = static_cast<std::uint32_t>(n);
    auto hi = static_cast<std::uint32_t>(n >> 32);
    counter_[0] += lo;
    if (counter_[0] < lo) ++hi;
    counter_[1] += hi;
    if (hi <= counter_[1]) return;
    if (++counter_[2] != 0) return;
    ++counter_[3];
  }
  Counter counter_{0, 0, 0, 0};
  Key key_;
};

// cuRAND's scale to (0, 1]: x * 2^-32 + 2^-33, which nvcc contracts into one fused
// multiply-add; std::fma rounds once as the device does.
inline constexpr float kTwoPow32Inv = 2.3283064e-10f;
inline constexpr float kTwoPow32Inv2Pi = 2.3283064e-10f * 6.2831855f;
inline float uniform(std::uint32_t x) noexcept {
  return std::fma(static_cast<float>(x), kTwoPow32Inv, kTwoPow32Inv / 2.0f);
}

// cuRAND's Box-Muller pair. The device computes sin and cos with __sincosf (the SFU's
// approximation), which the host cannot reproduce bit for bit: host normals differ from the
// device's in the last bits (a few ulp; see bench/results/tensor.md).
inline std::array<float, 2> box_muller(std::uint32_t x, std::uint32_t y) noexcept {
  const float u = uniform(x);
  const float v = std::fma(static_cast<float>(y), kTwoPow32Inv2Pi, kTwoPow32Inv2Pi / 2.0f);
  const float s = std::sqrt(-2.0f * std::log(u));
  return {std::sin(v) * s, std::cos(v) * s};
}

}  // namespace cudascope::cuda::detail::philox
