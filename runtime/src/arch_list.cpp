#include "arch_list.h"

#include <charconv>

namespace cudascope::cuda::detail {
namespace {

struct Arch {
  int number = -1;  // 86 for "sm_86"; -1: not an architecture of this kind
  char variant = 0;  // 'a': this architecture's own features, for it alone; 'f': its family's
};

// "sm_86" -> {86}, "sm_90a" -> {90, 'a'}, "compute_75" -> {75}.
Arch parse_arch(std::string_view arch, std::string_view prefix) {
  if (arch.substr(0, prefix.size()) != prefix) return {};
  const std::string_view digits = arch.substr(prefix.size());
  Arch out;
  const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), out.number);
  const std::string_view rest(end, static_cast<std::size_t>(digits.data() + digits.size() - end));
  if (error != std::errc{} || !(rest.empty() || rest == "a" || rest == "f")) return {};
  out.variant = rest.empty() ? 0 : rest[0];
  return out;
}

std::string join(const std::vector<std::string>& archs) {
  std::string text;
  for (const auto& arch : archs) text += (text.empty() ? "" : ", ") + arch;
  return text.empty() ? "none" : text;
}

}  // namespace

std::vector<std::string> parse_arch_list(std::string_view cmake_archs) {
  std::vector<std::string> archs;
  while (!cmake_archs.empty()) {
    const std::size_t comma = cmake_archs.find(',');
    const std::string_view entry = cmake_archs.substr(0, comma);
    cmake_archs = comma == std::string_view::npos ? std::string_view{} : cmake_archs.substr(comma + 1);
    const std::size_t dash = entry.find('-');
    const std::string number(entry.substr(0, dash));
    const std::string_view suffix = dash == std::string_view::npos ? "" : entry.substr(dash + 1);
    if (number.empty()) continue;
    if (suffix != "virtual") archs.push_back("sm_" + number);
    if (suffix != "real") archs.push_back("compute_" + number);
  }
  return archs;
}

bool arch_runs_on(std::string_view arch, int major, int minor) {
  const int device = major * 10 + minor;
  for (std::string_view prefix : {"sm_", "compute_"}) {
    const Arch code = parse_arch(arch, prefix);
    if (code.number < 0) continue;
    if (code.variant == 'a') return code.number == device;
    if (prefix == "sm_" || code.variant == 'f') return code.number / 10 == major && code.number % 10 <= minor;
    return code.number <= device;  // PTX: compiled by the driver for any later architecture
  }
  return false;
}

bool archs_run_on(const std::vector<std::string>& archs, int major, int minor) {
  for (const auto& arch : archs) {
    if (arch_runs_on(arch, major, minor)) return true;
  }
  return false;
}

std::string no_kernel_image_advice(const std::vector<std::string>& archs, int major, int minor) {
  const std::string capability = std::to_string(major) + "." + std::to_string(minor);
  return "this build's device code (" + join(archs) + ") has nothing a device of compute capability " + capability +
         " runs; configure cudascope with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(major) + std::to_string(minor) +
         " (or add it to the list), with a CUDA toolkit that knows that architecture";
}

}  // namespace cudascope::cuda::detail
