#pragma once
// The calling thread's last error, for the C entry points (cudascope_torch_last_error).

#include <string>

namespace cudascope::torch_allocator {

void set_last_error(std::string message) noexcept;
void clear_last_error() noexcept;
const std::string& last_error() noexcept;

}  // namespace cudascope::torch_allocator
