// The stream sanitizer's state and the hooks the runtime calls while it is enabled.
#include "hooks.h"
#include "stream_clocks.h"
#include "tensor_accesses.h"

#include <cudascope/cuda/sanitizer.h>
#include <cudascope/util/env_value.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>

namespace cudascope::cuda::sanitizer {
namespace detail {
namespace {

constexpr std::size_t kKeptReports = 64;

struct State {
  std::mutex mutex;
  OnRace on_race = OnRace::kPrint;
  StreamClocks clocks;
  TensorAccesses tensors;
  std::uint64_t seq_num = 0;
  std::uint64_t races = 0;
  std::deque<RaceReport> reports;
};

// Never destroyed: storages and events freed during exit still reach the hooks.
State& state() {
  static auto* s = new State();
  return *s;
}

void reset(State& s) {
  s.clocks = StreamClocks();
  s.tensors = TensorAccesses();
  s.seq_num = 0;
  s.races = 0;
  s.reports.clear();
}

// Python's traceback layout, with the offset in the object where Python has a line.
std::string format_stack(alloc::Symbolizer& symbolizer, const alloc::ContextPtr& context) {
  std::string out;
  for (const memory::Frame& frame : symbolizer.frames(context)) {
    if (frame.filename.empty()) continue;  // an address no loaded object contains: the walk's end
    char offset[32];
    std::snprintf(offset, sizeof offset, "0x%x", static_cast<unsigned>(frame.line));
    out.append("  File \"").append(frame.filename).append("\", offset ").append(offset).append(", in ");
    out.append(frame.name).append("\n");
  }
  return out;
}

Access to_access(alloc::Symbolizer& symbolizer, const AccessRecord& record) {
  Access access;
  access.type = record.type;
  access.seq_num = record.seq_num;
  access.device = record.stream.first;
  access.stream = record.stream.second;
  access.op = record.op;
  access.arguments.assign(record.arguments.begin(), record.arguments.end());
  access.is_output = record.is_output;
  access.stack = format_stack(symbolizer, record.stack);
  return access;
}

// A kernel's operands merged by storage: one tensor passed as several arguments is one access
// (a write when any of them is written), as CSAN's argument handler.
struct Merged {
  std::uintptr_t data;
  bool write;
  bool is_output;
  std::vector<const char*> names;
};

void merge_operand(std::vector<Merged>& merged, const Operand& operand, bool write) {
  if (operand.data == nullptr) return;
  const auto data = reinterpret_cast<std::uintptr_t>(operand.data);
  Merged* entry = nullptr;
  for (Merged& m : merged) {
    if (m.data == data) entry = &m;
  }
  if (entry == nullptr) entry = &merged.emplace_back(Merged{data, false, false, {}});
  entry->write = entry->write || write;
  if (operand.name != nullptr) {
    entry->names.push_back(operand.name);
  } else {
    entry->is_output = true;
  }
}

// The previous accesses of `history` that `current` must be ordered after: the reads since
// the last write for a write that follows reads, else the last write.
template <typename F>
void for_each_conflict_candidate(const TensorHistory& history, Access::Type current, F f) {
  if (current == Access::Type::kWrite && !history.reads.empty()) {
    for (const AccessRecord& read : history.reads) f(read);
  } else if (history.write) {
    f(*history.write);
  }
}

void handle_races(State& s, std::vector<RaceReport>& found) {
  s.races += found.size();
  for (const RaceReport& report : found) {
    s.reports.push_back(report);
    if (s.reports.size() > kKeptReports) s.reports.pop_front();
  }
  if (s.on_race == OnRace::kThrow) throw UnsynchronizedAccessError(std::move(found.front()));
  for (const RaceReport& report : found) std::fprintf(stderr, "%s\n", report.message().c_str());
}

}  // namespace

void kernel_launch(const char* op, int device, std::int64_t stream, std::span<const Operand> reads,
                   std::span<const Operand> writes) {
  std::vector<Merged> operands;
  for (const Operand& operand : reads) merge_operand(operands, operand, false);
  for (const Operand& operand : writes) merge_operand(operands, operand, true);
  if (operands.empty()) return;
  alloc::ContextPtr stack = alloc::capture_context(/*cpp_stacks=*/true);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!active()) return;
  const std::uint64_t seq_num = ++s.seq_num;
  const StreamKey key{device, stream};
  s.clocks.advance(key, seq_num);

  std::vector<AccessRecord> records;
  std::vector<RaceReport> found;
  alloc::Symbolizer symbolizer;  // per report batch: contexts it caches by address die later
  for (const Merged& m : operands) {
    AccessRecord record{m.write ? Access::Type::kWrite : Access::Type::kRead, seq_num, key, op, m.names,
                        m.is_output, stack};
    const TensorHistory& history = s.tensors.at(m.data);
    for_each_conflict_candidate(history, record.type, [&](const AccessRecord& previous) {
      if (s.clocks.ordered_after(key, previous.seq_num, previous.stream)) return;
      RaceReport report;
      report.data_ptr = m.data;
      report.current = to_access(symbolizer, record);
      report.previous = to_access(symbolizer, previous);
      report.allocation_stack = format_stack(symbolizer, history.allocation_stack);
      found.push_back(std::move(report));
    });
    records.push_back(std::move(record));
  }
  // Throw mode throws before recording: the kernel is not queued.
  if (!found.empty()) handle_races(s, found);
  for (std::size_t i = 0; i < operands.size(); ++i) {
    if (operands[i].write) {
      s.tensors.set_write(operands[i].data, std::move(records[i]));
    } else {
      s.tensors.add_read(operands[i].data, std::move(records[i]));
    }
  }
}

void memory_allocated(const void* data) {
  alloc::ContextPtr stack = alloc::capture_context(/*cpp_stacks=*/true);
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (active()) s.tensors.allocated(reinterpret_cast<std::uintptr_t>(data), std::move(stack));
}

void memory_freed(const void* data) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (active()) s.tensors.freed(reinterpret_cast<std::uintptr_t>(data));
}

void event_recorded(const void* event, int device, std::int64_t stream) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (active()) s.clocks.record_event(event, {device, stream});
}

void event_waited(const void* event, int device, std::int64_t stream) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (active()) s.clocks.wait_event({device, stream}, event);
}

void event_destroyed(const void* event) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (active()) s.clocks.forget_event(event);
}

void event_synchronized(const void* event) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (active()) s.clocks.synchronize_event(event);
}

void stream_synchronized(int device, std::int64_t stream) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (active()) s.clocks.synchronize_stream({device, stream});
}

void device_synchronized(int device) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (active()) s.clocks.synchronize_device(device);
}

}  // namespace detail

void enable_cuda_sanitizer(OnRace on_race) {
  detail::State& s = detail::state();
  std::lock_guard lock(s.mutex);
  detail::reset(s);
  s.on_race = on_race;
  detail::enabled_flag.store(true, std::memory_order_relaxed);
}

void disable_cuda_sanitizer() {
  detail::State& s = detail::state();
  std::lock_guard lock(s.mutex);
  detail::enabled_flag.store(false, std::memory_order_relaxed);
  detail::reset(s);
}

bool is_enabled() noexcept { return detail::active(); }

Stats stats() {
  detail::State& s = detail::state();
  std::lock_guard lock(s.mutex);
  return Stats{s.tensors.size(), s.clocks.stream_count(), s.clocks.event_count(), s.seq_num, s.races};
}

std::vector<RaceReport> reports() {
  detail::State& s = detail::state();
  std::lock_guard lock(s.mutex);
  return {s.reports.begin(), s.reports.end()};
}

namespace {
// CUDASCOPE_CUDA_SANITIZER=1 enables print mode when the runtime loads (torch reads
// TORCH_CUDA_SANITIZER the same way; that name is left to torch).
const bool enabled_from_environment = [] {
  // Read while the runtime loads: a bad value is named and ignored, never thrown from here.
  try {
    if (!util::env_cuda_sanitizer().value_or(false)) return false;
  } catch (const util::EnvError& e) {
    std::fprintf(stderr, "cudascope: %s; the sanitizer stays off\n", e.what());
    return false;
  }
  enable_cuda_sanitizer(OnRace::kPrint);
  return true;
}();
}  // namespace

}  // namespace cudascope::cuda::sanitizer
