#pragma once
// torch.cuda's random-number functions: one Philox-4x32-10 generator per device, its state a
// seed and a Philox offset (torch's CUDAGeneratorImpl). rand/randn (tensor.h) draw from the
// generator of the tensor's device and advance its offset as torch does, so after the same
// manual_seed they give torch's numbers on the same device.
//
// Thread-safety: all functions are thread-safe. `device` -1 means the current device.

#include <cstdint>
#include <vector>

namespace cudascope::cuda {

// torch's default seed before any manual_seed: 67280421310721.
inline constexpr std::uint64_t kDefaultRngSeed = 67280421310721ULL;

// Seeds the current device's generator (offset back to 0).
void manual_seed(std::uint64_t seed);
void manual_seed_all(std::uint64_t seed);
// Seeds the current device's (every device's) generator with a non-deterministic 53-bit
// number, as torch; returns it (torch returns None: read it with initial_seed()).
std::uint64_t seed();
std::uint64_t seed_all();
// The current device's seed.
std::uint64_t initial_seed();

// The generator's state as torch.cuda.get_rng_state returns it: 16 bytes, the seed (uint64)
// then the Philox offset (int64), little-endian.
std::vector<std::uint8_t> get_rng_state(int device = -1);
std::vector<std::vector<std::uint8_t>> get_rng_state_all();
// Restores a state from get_rng_state (16 bytes; 8 bytes sets the seed with offset 0, as
// torch accepts). Another size, or an offset that is not a multiple of 4, throws cuda::Error.
void set_rng_state(const std::vector<std::uint8_t>& state, int device = -1);
void set_rng_state_all(const std::vector<std::vector<std::uint8_t>>& states);

namespace rng {
// Beyond torch, for tests and tools: the Philox offset the next draw starts at.
std::uint64_t philox_offset(int device = -1);
}  // namespace rng

}  // namespace cudascope::cuda
