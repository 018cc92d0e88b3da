#include "last_error.h"

namespace cudascope::torch_allocator {
namespace {
thread_local std::string message_of_thread;
}  // namespace

void set_last_error(std::string message) noexcept {
  try {
    message_of_thread = std::move(message);
  } catch (...) {
    // Out of host memory while reporting: the previous message stays.
  }
}

void clear_last_error() noexcept { message_of_thread.clear(); }

const std::string& last_error() noexcept { return message_of_thread; }

}  // namespace cudascope::torch_allocator
