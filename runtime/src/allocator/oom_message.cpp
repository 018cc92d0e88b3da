#include "oom_message.h"

#include <cstdio>

namespace cudascope::cuda::detail::alloc {

std::string format_size(std::uint64_t size) {
  char text[64];
  if (size <= 1024) {
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(size));
  } else if (size <= 1048576) {
    std::snprintf(text, sizeof text, "%.2f KiB", static_cast<double>(size) / 1024.0);
  } else if (size <= 1073741824ULL) {
    std::snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(size) / 1048576.0);
  } else {
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(size) / 1073741824.0);
  }
  return text;
}

std::string oom_message(const OomFacts& f) {
  std::string m = "CUDA out of memory. Tried to allocate " + format_size(f.requested) + ". GPU " +
                  std::to_string(f.device) + " has a total capacity of " + format_size(f.device_total) + " of which " +
                  format_size(f.device_free) + " is free. ";
  if (f.allowed != 0) m += format_size(f.allowed) + " allowed; ";
  const std::size_t unallocated = f.reserved > f.allocated ? f.reserved - f.allocated : 0;
  m += "Of the allocated memory " + format_size(f.allocated) + " is allocated by cudascope, and " +
       format_size(unallocated) + " is reserved by cudascope but unallocated; the largest free cached block is " +
       format_size(f.largest_free_block) + ".";
  if (unallocated > 0 && f.largest_free_block < f.requested) {
    m += " If reserved but unallocated memory is large try setting "
         "CUDASCOPE_ALLOC_CONF=expandable_segments:True to avoid fragmentation.";
  }
  return m;
}

}  // namespace cudascope::cuda::detail::alloc
