// dump_snapshot: chooses the encoding by extension.
#include "whole_file.h"

#include "../check.h"

#include <cudascope/cuda/memory.h>

namespace cudascope::cuda::memory {

void dump_snapshot(const std::string& path) { dump_snapshot(memory_snapshot(), path); }

void dump_snapshot(const Snapshot& snapshot, const std::string& path) {
  const std::string base = path.ends_with(".gz") ? path.substr(0, path.size() - 3) : path;
  std::string data;
  if (base.ends_with(".json")) {
    data = snapshot_to_json(snapshot);
  } else if (base.ends_with(".pickle") || base.ends_with(".pkl")) {
    data = snapshot_to_pickle(snapshot);
  } else {
    detail::throw_error(error_code::kInvalidValue, "dump_snapshot", __FILE__, __LINE__,
                        path + ": unknown snapshot format; use .json, .pickle or .pkl, optionally with .gz");
  }
  detail::alloc::write_whole_file(path, data);
}

}  // namespace cudascope::cuda::memory
