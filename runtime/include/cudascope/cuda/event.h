#pragma once
// Events: torch.cuda.Event. The underlying event is created lazily at the first record()
// on the recording stream's device, as torch does. Not thread-safe per object.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace cudascope::cuda {

class Stream;

// cudaIpcEventHandle_t's 64 bytes.
using IpcEventHandle = std::array<std::uint8_t, 64>;

class Event {
 public:
  explicit Event(bool enable_timing = false, bool blocking = false, bool interprocess = false);
  ~Event();
  Event(Event&&) noexcept;
  Event& operator=(Event&&) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Opens an event another process shared through ipc_handle().
  static Event from_ipc_handle(const IpcEventHandle& handle, int device = -1);

  void record();  // on the current stream
  void record(const Stream& stream);
  void wait();  // makes the current stream wait
  void wait(const Stream& stream);
  bool query() const;  // true when not yet recorded, or the recorded work is done
  void synchronize() const;
  // Milliseconds between this event and `end`; both recorded with enable_timing.
  float elapsed_time(const Event& end) const;
  IpcEventHandle ipc_handle() const;

  // A name for the time this event starts: elapsed_time(end) reports the span under it to
  // the profiler (a range on the stream in the trace, a duration histogram in metrics).
  // Unnamed spans are reported too, as "event timing".
  void set_name(std::string name) { name_ = std::move(name); }
  const std::string& name() const noexcept { return name_; }
  // The stream of the last record(); -1 before the first.
  std::int64_t recorded_stream() const noexcept { return recorded_stream_; }

  bool is_created() const noexcept;
  int device_index() const noexcept { return device_; }
  void* handle() const noexcept;

 private:
  struct Impl;
  void ensure_created(int device);
  bool enable_timing_;
  bool blocking_;
  bool interprocess_;
  int device_ = -1;
  std::int64_t recorded_stream_ = -1;
  std::string name_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cudascope::cuda
