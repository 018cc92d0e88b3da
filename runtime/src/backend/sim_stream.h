#pragma once
// A simulated stream: one worker thread, started with its first work, executing queued work
// in order.

#include "sim_graph.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace cudascope::cuda::detail {

class SimStream {
 public:
  SimStream(int device, int priority, std::int64_t id);
  ~SimStream();  // drains the queue, then joins the worker
  SimStream(const SimStream&) = delete;
  SimStream& operator=(const SimStream&) = delete;

  // Queues `work`; it runs on the worker after everything queued before it. While the
  // stream captures, `work` becomes a node of the capture's graph (named `label`) instead.
  void enqueue(std::function<void()> work, const char* label = "work");
  // Queues `mark` (an event's completion): it runs once everything queued before it has run,
  // with the stream already counting as idle if nothing follows it, so whoever sees the mark
  // sees the stream as the device would show it. `mark` must be short and take no stream lock.
  void enqueue_mark(std::function<void()> mark, const char* label = "event");
  // Stream capture: the capture this stream records into (nullptr when none).
  void set_capture(SimCapturePtr capture);
  SimCapturePtr capture() const;
  bool query();
  void synchronize();

  // Nanoseconds this stream has spent running work so far (the work running now included),
  // for the simulated device's utilization figure.
  std::uint64_t busy_ns() const noexcept;

  int device() const noexcept { return device_; }
  int priority() const noexcept { return priority_; }
  std::int64_t id() const noexcept { return id_; }

 private:
  void run();

  const int device_;
  const int priority_;
  const std::int64_t id_;
  mutable std::mutex mutex_;
  SimCapturePtr capture_;
  std::condition_variable work_ready_;
  std::condition_variable drained_;
  struct Work {
    std::function<void()> run;
    bool is_mark = false;
  };
  void enqueue_work(Work work, const char* label);

  std::deque<Work> queue_;
  bool running_work_ = false;
  std::atomic<std::uint64_t> busy_ns_{0};
  std::atomic<std::uint64_t> running_since_ns_{0};  // 0 when idle
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace cudascope::cuda::detail
