#include "sim_stream.h"

#include <pthread.h>

#include <chrono>

#include <string>

namespace cudascope::cuda::detail {
namespace {
std::uint64_t steady_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}
}  // namespace

std::uint64_t SimStream::busy_ns() const noexcept {
  const std::uint64_t since = running_since_ns_.load();
  return busy_ns_.load() + (since != 0 ? steady_ns() - since : 0);
}

SimStream::SimStream(int device, int priority, std::int64_t id)
    : device_(device), priority_(priority), id_(id) {}

SimStream::~SimStream() {
  {
    std::unique_lock lock(mutex_);
    drained_.wait(lock, [this] { return queue_.empty() && !running_work_; });
    stopping_ = true;
  }
  work_ready_.notify_one();
  if (worker_.joinable()) worker_.join();
}

void SimStream::enqueue(std::function<void()> work, const char* label) {
  enqueue_work(Work{std::move(work), false}, label);
}

void SimStream::enqueue_mark(std::function<void()> mark, const char* label) {
  enqueue_work(Work{std::move(mark), true}, label);
}

void SimStream::enqueue_work(Work work, const char* label) {
  {
    std::lock_guard lock(mutex_);
    if (capture_ != nullptr) [[unlikely]] {
      capture_->append(SimGraphNode{label, std::move(work.run)}, this);
      return;
    }
    queue_.push_back(std::move(work));
    // Started with the first work: a stream pool creates 128 streams, most never used.
    if (!worker_.joinable()) worker_ = std::thread([this] { run(); });
  }
  work_ready_.notify_one();
}

void SimStream::set_capture(SimCapturePtr capture) {
  std::lock_guard lock(mutex_);
  capture_ = std::move(capture);
}

SimCapturePtr SimStream::capture() const {
  std::lock_guard lock(mutex_);
  return capture_;
}

void SimCapture::append(SimGraphNode node, SimStream* from) {
  std::lock_guard lock(mutex);
  graph.nodes.push_back(std::move(node));
  for (auto& [stream, unjoined] : joined) {
    if (stream == from) unjoined = true;
  }
}

void SimCapture::invalidate(const std::string& call) {
  std::lock_guard lock(mutex);
  if (!invalidated) invalidated_by = call;
  invalidated = true;
}

bool SimStream::query() {
  std::lock_guard lock(mutex_);
  return queue_.empty() && !running_work_;
}

void SimStream::synchronize() {
  std::unique_lock lock(mutex_);
  drained_.wait(lock, [this] { return queue_.empty() && !running_work_; });
}

void SimStream::run() {
  const std::string thread_name = "sim-d" + std::to_string(device_) + "-s" + std::to_string(id_);
  pthread_setname_np(pthread_self(), thread_name.substr(0, 15).c_str());
  std::unique_lock lock(mutex_);
  for (;;) {
    work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stopping and drained
    Work work = std::move(queue_.front());
    queue_.pop_front();
    if (work.is_mark) {
      // Under the lock with nothing running: the stream is idle when the mark is seen, if
      // nothing was queued after it.
      work.run();
      work.run = nullptr;
      if (queue_.empty()) drained_.notify_all();
      continue;
    }
    running_work_ = true;
    lock.unlock();
    const std::uint64_t started = steady_ns();
    running_since_ns_.store(started);
    work.run();
    // Done with it before the stream counts as drained: what it holds (an interprocess
    // event's shared state, whose last holder removes its name) is released by then.
    work.run = nullptr;
    running_since_ns_.store(0);
    busy_ns_.fetch_add(steady_ns() - started);
    lock.lock();
    running_work_ = false;
    if (queue_.empty()) drained_.notify_all();
  }
}

}  // namespace cudascope::cuda::detail
