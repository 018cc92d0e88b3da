#include "ipc_children.h"

#include <cstdio>
#include <cstdlib>

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

const ChildModeRegistrar write_mode{"--ipc-write-child", &write_child};
const ChildModeRegistrar hold_mode{"--ipc-hold-child", &hold_child};

}  // namespace

ChildResult run_ipc_child(const char* flag, const cuda::SharedTensorHandle& handle) {
  return run_self({flag, handle.serialize()});
}

}  // namespace cudascope::testing
