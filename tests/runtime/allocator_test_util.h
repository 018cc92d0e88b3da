#pragma once
// Helpers shared by the allocator tests: flat JSON stats files and a clean allocator.

#include "test_support.h"

#include "allocator/caching_allocator.h"
#include "allocator/whole_file.h"

#include <cudascope/cuda.h>

#include <map>
#include <string>

namespace cudascope::testing {

inline std::string data_path(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA_DIR) + "/" + name; }

// {"key": integer, ...} as memory_stats JSON files hold it.
inline std::map<std::string, std::int64_t> read_stats_json(const std::string& path) {
  const std::string text = cuda::detail::alloc::read_whole_file(path);
  std::map<std::string, std::int64_t> out;
  std::size_t i = 0;
  while ((i = text.find('"', i)) != std::string::npos) {
    const std::size_t end = text.find('"', i + 1);
    const std::string key = text.substr(i + 1, end - i - 1);
    std::size_t colon = text.find(':', end);
    out[key] = std::stoll(text.substr(colon + 1));
    i = text.find_first_of(",}", colon);
  }
  return out;
}

// Frees nothing but drops caches and counters so each test starts from a fresh allocator.
inline void fresh_allocator(int device = 0) {
  // Release under the configuration the segments were made with (oversize counts depend on it).
  cuda::empty_cache();
  cuda::memory::set_allocator_settings("");
  cuda::detail::alloc::clear_memory_limit(device);
  cuda::reset_accumulated_memory_stats(device);
  cuda::reset_peak_memory_stats(device);
}

}  // namespace cudascope::testing
