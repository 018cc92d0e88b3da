#pragma once
// The device code a build carries, as torch.cuda.get_arch_list() names it ("sm_80" for a
// device binary, "compute_75" for PTX the driver compiles at load time), and which devices
// can run it: what turns "no kernel image is available" into a message that says what to
// rebuild with.

#include <string>
#include <string_view>
#include <vector>

namespace cudascope::cuda::detail {

// CMake's CUDA_ARCHITECTURES, comma-separated ("75,80-real,90-virtual"): an entry without a
// suffix is both a device binary and its PTX, "-real" the binary alone, "-virtual" the PTX alone.
std::vector<std::string> parse_arch_list(std::string_view cmake_archs);

// Whether code for `arch` runs on a device of compute capability major.minor: a device binary
// on the same major version at the same or a later minor one; PTX on any later architecture;
// "sm_90a" (an architecture's own features) on that architecture alone, "sm_100f" (a family's)
// as a device binary.
bool arch_runs_on(std::string_view arch, int major, int minor);

// Whether any of `archs` runs on the device.
bool archs_run_on(const std::vector<std::string>& archs, int major, int minor);

// For a launch that found no kernel image: the build's device code, the device's capability,
// and the CMake setting that would build for it.
std::string no_kernel_image_advice(const std::vector<std::string>& archs, int major, int minor);

}  // namespace cudascope::cuda::detail
