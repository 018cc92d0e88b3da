#pragma once
// The line channel from recorded processes to `cudascope run`: a FIFO that run creates in a
// directory of its own and names in CUDASCOPE_PROGRESS. Every process of the program opens it
// by that path, so workers started with their descriptors closed (torchrun's, Python's
// subprocess) reach it as well as run's own child. The lines are those of injection_agent.h.
//
// Writing never blocks and never kills the program: the channel is opened non-blocking, a
// full FIFO is retried for a few milliseconds and then the line is dropped, and a FIFO whose
// reader is gone (run ended before a worker it left running) fails with EPIPE without the
// SIGPIPE that would end the process.

#include <string_view>

namespace cudascope::inject {

// The channel CUDASCOPE_PROGRESS names, opened for writing (close-on-exec), or -1 when the
// variable is unset, the path is not a FIFO, or no reader holds it open. Never throws.
int open_progress_channel() noexcept;

// Writes one line whole, so lines of several processes never interleave; a line longer than
// PIPE_BUF (a path of thousands of characters) is not written. False when it was not written
// (no channel, the reader gone, the FIFO full for too long, the line too long).
bool write_progress_line(int fd, std::string_view line) noexcept;

}  // namespace cudascope::inject
