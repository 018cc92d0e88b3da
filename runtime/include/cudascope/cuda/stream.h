#pragma once
// Streams: torch.cuda.Stream, ExternalStream, StreamContext and the per-thread current
// stream. A Stream is a cheap value (device, id, handle); the stream it names lives until
// process exit, as in torch's stream pools, unless it is an ExternalStream.
// Thread-safety: all functions are thread-safe; the current stream is per thread and device.

#include <cstddef>
#include <cstdint>
#include <utility>

namespace cudascope::cuda {

class Event;

class Stream {
 public:
  // The next stream of `device`'s pool (-1: current device) at `priority` (0 default; lower
  // is higher priority, within priority_range()), round-robin over 32 streams per priority
  // level, as torch's getStreamFromPool: at most 4 levels, a priority past the last getting
  // the last level (priority() says which). The first Stream() on a device creates its whole
  // pool, as torch does on CUDA.
  explicit Stream(int device = -1, int priority = 0);

  bool query() const;               // all work done?
  void synchronize() const;         // waits for all work (a synchronizing call)
  void wait_event(const Event& event) const;
  void wait_stream(const Stream& other) const;
  // Records a new event on this stream and returns it (or records `event` if given).
  Event record_event() const;
  void record_event(Event& event) const;

  int device_index() const noexcept { return device_; }
  int priority() const noexcept { return priority_; }
  std::int64_t id() const noexcept { return id_; }
  // The backend's stream handle: a cudaStream_t on the cuda backend.
  void* handle() const noexcept { return handle_; }

  // {least, greatest} priority: {0, -5} on Hopper, as cudaDeviceGetStreamPriorityRange.
  static std::pair<int, int> priority_range();

  friend bool operator==(const Stream& a, const Stream& b) noexcept {
    return a.device_ == b.device_ && a.handle_ == b.handle_;
  }

 protected:
  struct Wrap {};
  Stream(Wrap, int device, int priority, std::int64_t id, void* handle) noexcept
      : device_(device), priority_(priority), id_(id), handle_(handle) {}
  friend Stream current_stream(int);
  friend Stream default_stream(int);

 private:
  int device_;
  int priority_;
  std::int64_t id_;
  void* handle_;
};

// A stream created outside cudascope (a cudaStream_t), not owned.
class ExternalStream : public Stream {
 public:
  ExternalStream(void* stream_ptr, int device = -1);
};

Stream current_stream(int device = -1);
Stream default_stream(int device = -1);
// Makes `stream` current for its device on this thread and that device the thread's current
// device (torch.cuda.set_stream). Not restored: StreamGuard is the scoped form.
void set_stream(const Stream& stream);

// torch.cuda.stream(s): makes `stream` current and its device the current device, and
// restores both at scope exit.
class StreamGuard {
 public:
  explicit StreamGuard(const Stream& stream) noexcept;
  ~StreamGuard() noexcept;
  StreamGuard(const StreamGuard&) = delete;
  StreamGuard& operator=(const StreamGuard&) = delete;
  StreamGuard(StreamGuard&&) = delete;
  StreamGuard& operator=(StreamGuard&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

 private:
  int original_device_;
  Stream original_stream_on_target_;
};

}  // namespace cudascope::cuda
