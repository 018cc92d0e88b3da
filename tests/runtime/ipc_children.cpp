#include "ipc_children.h"

#include "ipc/opened_segments.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

namespace cuda = cudascope::cuda;

namespace cudascope::testing {
namespace {

int write_child(int argc, char** argv) {
  if (argc < 3) return 10;
  const cuda::SharedTensorHandle handle = cuda::SharedTensorHandle::parse(argv[2]);
  {
    Tensor t = cuda::open_shared_tensor(handle);
    Tensor again = cuda::open_shared_tensor(handle);
    double sum = 0;
    for (double v : t.to_vector()) sum += v;
    std::printf("sum=%.1f same_base=%d open_handles=%zu\n", sum, again.data_ptr() == t.data_ptr() ? 1 : 0,
                cuda::ipc_stats().open_mem_handles);
    t.record_stream(cuda::current_stream(t.device().index));  // another process's memory: a no-op
    const Tensor ones = cudascope::ones(t.sizes(), TensorOptions{}.with_device(t.device()));
    t.copy_(t.add(t).add(ones));
    cuda::synchronize();
  }
  std::printf("open_handles_after=%zu\n", cuda::ipc_stats().open_mem_handles);
  return 0;
}

int hold_child(int argc, char** argv) {
  if (argc < 3) return 10;
  Tensor t = cuda::open_shared_tensor(cuda::SharedTensorHandle::parse(argv[2]));
  std::printf("numel=%lld\n", static_cast<long long>(t.numel()));
  std::fflush(stdout);
  std::_Exit(0);  // no destructors: the tensor is never released
}

// Counts the mappings of other processes' memory that are open at once, from the calls the
// sim backend reports in the order it makes them.
class MappingCounter : public cuda::instrumentation::Observer {
 public:
  void on_allocator_event(const cuda::instrumentation::AllocatorEvent&) override {}
  void on_api_call(const cuda::instrumentation::ApiCall& call) override {
    std::lock_guard lock(mutex_);
    if (std::strcmp(call.name, "cudaIpcOpenMemHandle") == 0) {
      ++opens_;
      most_ = std::max(most_, ++mapped_);
    } else if (std::strcmp(call.name, "cudaIpcCloseMemHandle") == 0) {
      --mapped_;
    }
  }
  void print() {
    std::lock_guard lock(mutex_);
    std::printf("opens=%d most_mapped=%d mapped_after=%d\n", opens_, most_, mapped_);
  }

 private:
  std::mutex mutex_;
  int opens_ = 0, mapped_ = 0, most_ = 0;
};

int reopen_child(int argc, char** argv) {
  if (argc < 3) return 10;
  const cuda::SharedTensorHandle handle = cuda::SharedTensorHandle::parse(argv[2]);
  cuda::set_device(handle.device);
  MappingCounter counter;
  cuda::instrumentation::set_observer(&counter);
  {
    cuda::detail::ipc::OpenedSegments segments;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 300; ++i) {
          const std::shared_ptr<void> segment = segments.open(handle.device, handle.mem_handle);
          if (segment == nullptr) std::abort();
          if (i % 3 == 0) std::this_thread::yield();  // vary who lets go last
        }
      });
    }
    for (auto& thread : threads) thread.join();
  }
  cuda::instrumentation::set_observer(nullptr);
  counter.print();
  return 0;
}

const ChildModeRegistrar reopen_mode{"--ipc-reopen-child", &reopen_child};
const ChildModeRegistrar write_mode{"--ipc-write-child", &write_child};
const ChildModeRegistrar hold_mode{"--ipc-hold-child", &hold_child};

}  // namespace

ChildResult run_ipc_child(const char* flag, const cuda::SharedTensorHandle& handle) {
  return run_self({flag, handle.serialize()});
}

}  // namespace cudascope::testing
