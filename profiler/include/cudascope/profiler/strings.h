#pragma once
// Process-lifetime copies of strings that records point at (device names, NVTX domains,
// registered strings, thread names): records stay fixed-size and the writer reads them
// after the caller's copy is gone. For rare strings only: interning takes a lock.

#include <string_view>

namespace cudascope::profiler {

// The same pointer for equal text, valid until the process ends. Thread-safe.
const char* intern(std::string_view text);

}  // namespace cudascope::profiler
