#pragma once
// Whole-file reads and writes, gzip-compressed when the name ends in ".gz". Errors throw
// cuda::Error naming the file.

#include <string>

namespace cudascope::cuda::detail::alloc {

std::string read_file_maybe_gz(const std::string& path);
void write_file_maybe_gz(const std::string& path, const std::string& data);
bool ends_with(const std::string& s, const std::string& suffix);

}  // namespace cudascope::cuda::detail::alloc
