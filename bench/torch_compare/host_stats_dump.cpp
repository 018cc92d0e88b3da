// The pinned-memory steps of host_stats_check.py through cudascope's caching host allocator:
// reads one step a line from stdin and, at each "stats LABEL" step, prints host_memory_stats()
// as one JSON line {"label": ..., "stats": {...}}. The steps mirror what the script does with
// torch (pinned tensors, non_blocking copies on side streams), so both allocators see the
// same calls:
//   alloc NAME BYTES   a pinned uint8 CPU tensor of BYTES elements, kept under NAME
//   free NAME          drops it (the allocator's free)
//   use NAME STREAM    copies it to a device tensor with non_blocking on side stream STREAM
//                      (0, 1, ...): the pinned block is marked as used there
//   sleep STREAM MS    keeps STREAM busy for MS milliseconds
//   sync STREAM|all    waits for one side stream, or for the whole device
//   empty_cache | reset_peak | reset_accumulated
//   stats LABEL
// Exit status 2 on a malformed step (the message names the line).
#include <cudascope/cuda.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace cuda = cudascope::cuda;
using cudascope::Tensor;

namespace {

struct Steps {
  std::map<std::string, Tensor> pinned;
  std::vector<Tensor> device_copies;  // kept to the end, as the script keeps its own
  std::vector<std::unique_ptr<cuda::Stream>> streams;

  const cuda::Stream& stream(std::size_t index) {
    while (streams.size() <= index) streams.push_back(std::make_unique<cuda::Stream>(0));
    return *streams[index];
  }
};

void print_stats(const std::string& label) {
  std::printf("{\"label\": \"%s\", \"stats\": {", label.c_str());
  bool first = true;
  for (const auto& [key, value] : cuda::host_memory_stats()) {
    std::printf("%s\"%s\": %lld", first ? "" : ", ", key.c_str(), static_cast<long long>(value));
    first = false;
  }
  std::printf("}}\n");
  std::fflush(stdout);
}

// Runs one step; false when it is malformed.
bool run(Steps& steps, const std::string& line) {
  std::istringstream in(line);
  std::string op;
  in >> op;
  if (op.empty() || op[0] == '#') return true;
  const auto bytes = cudascope::TensorOptions{}.with_dtype(cudascope::DType::kUInt8);
  if (op == "alloc") {
    std::string name;
    std::int64_t n = 0;
    if (!(in >> name >> n) || n <= 0) return false;
    steps.pinned[name] = cudascope::empty({n}, cudascope::TensorOptions{bytes}.pinned());
  } else if (op == "free") {
    std::string name;
    if (!(in >> name) || steps.pinned.erase(name) != 1) return false;
  } else if (op == "use") {
    std::string name;
    std::size_t index = 0;
    if (!(in >> name >> index) || steps.pinned.count(name) != 1) return false;
    const Tensor& host = steps.pinned.at(name);
    cuda::StreamGuard guard(steps.stream(index));
    Tensor device = cudascope::empty(host.sizes(), cudascope::TensorOptions{bytes}.with_device(cudascope::Device::cuda(0)));
    device.copy_(host, /*non_blocking=*/true);
    steps.device_copies.push_back(std::move(device));
  } else if (op == "sleep") {
    std::size_t index = 0;
    long ms = 0;
    if (!(in >> index >> ms) || ms < 0) return false;
    cuda::busy_wait(std::chrono::milliseconds(ms), steps.stream(index));
  } else if (op == "sync") {
    std::string which;
    if (!(in >> which)) return false;
    if (which == "all") {
      cuda::synchronize();
    } else {
      steps.stream(std::stoul(which)).synchronize();
    }
  } else if (op == "empty_cache") {
    cuda::empty_host_cache();
  } else if (op == "reset_peak") {
    cuda::reset_peak_host_memory_stats();
  } else if (op == "reset_accumulated") {
    cuda::reset_accumulated_host_memory_stats();
  } else if (op == "stats") {
    std::string label;
    if (!(in >> label)) return false;
    print_stats(label);
  } else {
    return false;
  }
  return true;
}

}  // namespace

int main() {
  if (!cuda::is_available()) {
    std::fprintf(stderr, "host_stats_dump: no device (backend %s)\n", cuda::backend_name().c_str());
    return 1;
  }
  Steps steps;
  std::string line;
  for (int number = 1; std::getline(std::cin, line); ++number) {
    bool ok = false;
    try {
      ok = run(steps, line);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "host_stats_dump: step %d \"%s\" failed: %s\n", number, line.c_str(), e.what());
      return 1;
    }
    if (!ok) {
      std::fprintf(stderr, "host_stats_dump: step %d is malformed: \"%s\"\n", number, line.c_str());
      return 2;
    }
  }
  cuda::synchronize();
  return 0;
}
