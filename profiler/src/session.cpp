#include <cudascope/profiler/session.h>

#include "device_source.h"
#include "kernel_sampler.h"
#include "recording_state.h"
#include "runtime_source.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/instrumentation.h>
#include <cudascope/profiler/record_buffers.h>

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace cudascope::profiler {
namespace {

std::atomic<Session*> current_session{nullptr};

int env_int(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return *end == '\0' && value >= 0 ? static_cast<int>(value) : -1;
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!all.empty() && all.back() == '\0') all.pop_back();
  for (char& c : all) c = c == '\0' ? ' ' : c;
  if (all.size() > 200) all = all.substr(0, 197) + "...";
  return all;
}

}  // namespace

class Session::Impl {
 public:
  explicit Impl(const SessionOptions& options)
      : options(options), runtime_source(options.activities, options.kernel_sampling.get()) {}

  // On the sampler's thread. Serialised with attach_cupti, which reads the state when it
  // starts the device source: a switch is never lost between the two.
  void switch_kernel_records(bool on) noexcept {
    std::lock_guard lock(kernel_switch_mutex);
    if (detail::DeviceSource* device = live_device.load(std::memory_order_acquire)) device->set_kernel_records(on);
  }

  void writer_loop() {
    std::unique_lock lock(mutex);
    while (!stopping) {
      wake.wait_for(lock, options.flush_interval, [this] { return stopping; });
      if (stopping) break;
      lock.unlock();
      drain_and_flush();
      lock.lock();
    }
  }

  // Moves pending records to the sink, reports new drops, flushes. Only the writer thread,
  // or the controlling thread once the writer has stopped, calls it.
  void drain_and_flush() {
    if (detail::DeviceSource* device = live_device.load(std::memory_order_acquire)) device->deliver_completed();
    const std::size_t n = RecordBuffers::process().drain([this](const Record* records, std::size_t count) {
      sink->write(records, count);
    });
    records.fetch_add(n, std::memory_order_relaxed);
    report_drops();
    sink->flush();
    if (options.on_flush) options.on_flush(stats());
  }

  void report_drops() {
    const std::uint64_t buffer = RecordBuffers::process().dropped() - dropped_baseline;
    const detail::DeviceSource* device = live_device.load(std::memory_order_acquire);
    const std::uint64_t cupti = device ? device->dropped() : 0;
    const auto report = [&](DropSource source, std::uint64_t total, std::uint64_t& reported) {
      if (total == reported) return;
      reported = total;
      Record r = make_record(RecordKind::kDropped);
      r.detail = static_cast<std::uint8_t>(source);
      r.start_ns = r.end_ns = cuda::instrumentation::host_time_ns();
      r.thread_id = static_cast<std::uint32_t>(getpid());
      r.u.dropped.total = total;
      sink->write(&r, 1);
    };
    report(DropSource::kRecordBuffers, buffer, reported_buffer_drops);
    report(DropSource::kCupti, cupti, reported_cupti_drops);
  }

  SessionStats stats() const {
    SessionStats s;
    s.records = records.load(std::memory_order_relaxed);
    s.events = sink ? sink->events_written() : 0;
    s.dropped_buffer = RecordBuffers::process().dropped() - dropped_baseline;
    const detail::DeviceSource* device = live_device.load(std::memory_order_acquire);
    s.dropped_cupti = device ? device->dropped() : 0;
    s.buffer_bytes = RecordBuffers::process().bytes_held();
    return s;
  }

  SessionOptions options;
  detail::RuntimeSource runtime_source;
  std::unique_ptr<detail::DeviceSource> device_source;
  // device_source for the writer thread: attach_cupti may set it while the writer runs.
  std::atomic<detail::DeviceSource*> live_device{nullptr};
  std::mutex kernel_switch_mutex;
  std::unique_ptr<detail::KernelSampler> sampler;  // sampled sessions only
  std::unique_ptr<TraceSink> sink;
  MemorySink* memory = nullptr;  // sink, when recording into memory
  std::unique_ptr<MemorySink> kept;  // an in-memory session's records after stop
  std::thread writer;
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  bool running = false;
  std::string source_name;
  std::atomic<std::uint64_t> records{0};
  std::uint64_t dropped_baseline = 0;
  std::uint64_t reported_buffer_drops = 0;
  std::uint64_t reported_cupti_drops = 0;
};

Session::Session(SessionOptions options) : options_(std::move(options)) {}

Session::~Session() {
  try {
    stop();
  } catch (...) {
  }
}

Session* Session::current() noexcept { return current_session.load(); }

void Session::detach_after_fork() noexcept {
  detail::nvtx_recording_flag.store(false);
  cuda::instrumentation::set_observer(nullptr);
  RecordBuffers::process().forget_refiller_after_fork();
  current_session.store(nullptr);
}

bool Session::recording() const noexcept { return impl_ && impl_->running; }

void Session::start(std::unique_ptr<TraceSink> sink) {
  Session* expected = nullptr;
  if (!current_session.compare_exchange_strong(expected, this)) {
    throw std::logic_error(expected == this ? "this session is already recording" : "another profiler::Session is recording");
  }
  try {
    impl_ = std::make_unique<Impl>(options_);
    Impl& s = *impl_;
    if (!sink) {
      auto memory = std::make_unique<MemorySink>();
      s.memory = memory.get();
      sink = std::move(memory);
    }
    s.sink = std::move(sink);
    SourceKind source = options_.source;
    if (source == SourceKind::kAuto) source = cuda::backend_name() == "cuda" ? SourceKind::kCupti : SourceKind::kSim;
    s.source_name = source == SourceKind::kCupti ? "cupti" : source == SourceKind::kSim ? "sim" : "runtime";

    RecordBuffers& buffers = RecordBuffers::process();
    buffers.set_memory_limit(options_.max_buffer_bytes);
    buffers.discard();  // records left over from an earlier session
    buffers.reserve(std::min<std::size_t>(options_.max_buffer_bytes, 64u << 20));
    buffers.start_refiller(options_.flush_interval);
    s.dropped_baseline = buffers.dropped();

    TraceInfo info;
    info.process_id = static_cast<std::uint32_t>(getpid());
    info.process_name = command_line();
    info.start_ns = cuda::instrumentation::host_time_ns();
    info.activities = options_.activities.to_string();
    info.source = s.source_name;
    info.rank = env_int("RANK");
    info.world_size = env_int("WORLD_SIZE");
    s.sink->begin(info);

    cuda::instrumentation::set_observer(&s.runtime_source);
    detail::nvtx_recording_flag.store(options_.activities.contains(Activity::kNvtx));
    s.running = true;
    if (source == SourceKind::kCupti) attach_cupti();
    if (options_.kernel_sampling) {
      s.sampler = std::make_unique<detail::KernelSampler>(options_.kernel_sampling,
                                                          [&s](bool on) { s.switch_kernel_records(on); });
      s.sampler->start();
    }
    s.writer = std::thread([&s] { s.writer_loop(); });
  } catch (...) {
    if (impl_ && impl_->sampler) impl_->sampler->stop();
    detail::nvtx_recording_flag.store(false);
    cuda::instrumentation::set_observer(nullptr);
    RecordBuffers::process().stop_refiller();
    impl_.reset();
    current_session.store(nullptr);
    throw;
  }
}

void Session::attach_cupti() {
  if (!impl_ || !impl_->running) throw std::logic_error("attach_cupti: the session is not recording");
  if (impl_->device_source) return;
  auto source = detail::make_cupti_source(options_);
  if (!source) throw std::runtime_error("this build of cudascope has no CUPTI source (built without the CUDA toolkit)");
  std::lock_guard lock(impl_->kernel_switch_mutex);
  source->start();
  impl_->device_source = std::move(source);
  impl_->live_device.store(impl_->device_source.get(), std::memory_order_release);
  impl_->source_name = "cupti";
}

void Session::stop() {
  if (!impl_ || !impl_->running) return;
  Impl& s = *impl_;
  detail::nvtx_recording_flag.store(false);
  if (s.sampler) s.sampler->stop();  // kernel records off before CUPTI's last flush
  std::exception_ptr failure;
  if (s.device_source) {
    try {
      s.device_source->stop();  // forces CUPTI's buffers into the record buffers
    } catch (...) {
      failure = std::current_exception();
    }
  }
  cuda::instrumentation::set_observer(nullptr);
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
  }
  s.wake.notify_all();
  if (s.writer.joinable()) s.writer.join();
  s.drain_and_flush();
  RecordBuffers::process().stop_refiller();
  TraceSummary summary;
  const SessionStats stats = s.stats();
  summary.records = stats.records;
  summary.dropped_buffer = stats.dropped_buffer;
  summary.dropped_cupti = stats.dropped_cupti;
  summary.end_ns = cuda::instrumentation::host_time_ns();
  s.sink->end(summary);
  s.running = false;
  if (s.memory != nullptr) {
    s.kept.reset(static_cast<MemorySink*>(s.sink.release()));
    s.memory = nullptr;
  }
  current_session.store(nullptr);
  if (failure) std::rethrow_exception(failure);
}

void Session::export_to(TraceSink& sink) const {
  if (!impl_ || impl_->running || !impl_->kept) {
    throw std::logic_error("export_to: only a session started without a sink can be exported, after stop()");
  }
  const MemorySink& kept = *impl_->kept;
  sink.begin(kept.info());
  if (!kept.records().empty()) sink.write(kept.records().data(), kept.records().size());
  sink.end(kept.summary());
}

SessionStats Session::stats() const { return impl_ ? impl_->stats() : SessionStats{}; }

}  // namespace cudascope::profiler
