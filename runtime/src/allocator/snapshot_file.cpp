// dump_snapshot: chooses the encoding by extension.
#include "gzip_file.h"

#include "../check.h"

#include <cudascope/cuda/memory.h>

namespace cudascope::cuda::memory {

void dump_snapshot(const std::string& path) {
  using detail::alloc::ends_with;
  const std::string base = ends_with(path, ".gz") ? path.substr(0, path.size() - 3) : path;
  std::string data;
  if (ends_with(base, ".json")) {
    data = snapshot_to_json(memory_snapshot());
  } else if (ends_with(base, ".pickle") || ends_with(base, ".pkl")) {
    data = snapshot_to_pickle(memory_snapshot());
  } else {
    detail::throw_error(error_code::kInvalidValue, "dump_snapshot", __FILE__, __LINE__,
                        path + ": unknown snapshot format; use .json, .pickle or .pkl, optionally with .gz");
  }
  detail::alloc::write_file_maybe_gz(path, data);
}

}  // namespace cudascope::cuda::memory
