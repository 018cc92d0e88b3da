#include "oom_message.h"

#include <cudascope/util/byte_format.h>

namespace cudascope::cuda::detail::alloc {

using util::format_size;

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
