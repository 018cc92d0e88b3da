// GraphCapture: torch.cuda.graph's __enter__ and __exit__.
#include <cudascope/cuda/graphs.h>

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/memory.h>

#include <cstdio>
#include <exception>
#include <map>
#include <mutex>

namespace cudascope::cuda {
namespace {
// torch.cuda.graph.default_capture_stream: one side stream per device, made at first use.
Stream default_capture_stream(int device) {
  static std::mutex mutex;
  static auto* streams = new std::map<int, Stream>();
  std::lock_guard lock(mutex);
  auto it = streams->find(device);
  if (it == streams->end()) it = streams->emplace(device, Stream(device)).first;
  return it->second;
}
}  // namespace

GraphCapture::GraphCapture(CUDAGraph& graph, std::optional<MempoolId> pool, std::optional<Stream> stream,
                           CaptureErrorMode capture_error_mode, int exceptions_at_start)
    : exceptions_at_start_(exceptions_at_start),
      graph_(graph),
      previous_stream_(current_stream()),
      previous_device_(current_device()) {
  // As torch: finish outstanding work and return cached memory before capturing, so the
  // capture starts from a quiet device.
  synchronize();
  empty_cache();
  const Stream capture_stream = stream.value_or(default_capture_stream(current_device()));
  const Stream previous_on_target = current_stream(capture_stream.device_index());
  set_stream(capture_stream);
  try {
    graph_.capture_begin(pool, capture_error_mode);
  } catch (...) {
    set_stream(previous_on_target);
    set_stream(previous_stream_);
    set_device(previous_device_);
    throw;
  }
  previous_on_target_ = previous_on_target;
}

void GraphCapture::end() {
  if (ended_) return;
  ended_ = true;
  auto restore = [&] {
    set_stream(*previous_on_target_);
    set_stream(previous_stream_);
    set_device(previous_device_);
  };
  try {
    graph_.capture_end();
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

void GraphCapture::finish(bool unwinding) noexcept {
  if (ended_) return;
  try {
    if (unwinding) {
      graph_.reset();  // the scope failed: drop the capture
      ended_ = true;
      set_stream(*previous_on_target_);
      set_stream(previous_stream_);
      set_device(previous_device_);
    } else {
      end();
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cudascope: GraphCapture: the capture failed at scope exit: %s\n", e.what());
  }
}

}  // namespace cudascope::cuda
