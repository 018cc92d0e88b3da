#pragma once
// Whole-file reads and writes for the allocator (snapshots, replay sidecars), gzip when the
// data says so (reading) or the name ends in ".gz" (writing), through cudascope::util.
// Errors throw cuda::Error (kInvalidValue) naming the file, as the rest of the runtime does.

#include <string>
#include <string_view>

namespace cudascope::cuda::detail::alloc {

// At most util::input_budget() bytes after decompression.
std::string read_whole_file(const std::string& path);
void write_whole_file(const std::string& path, std::string_view data);

}  // namespace cudascope::cuda::detail::alloc
