// Tensor copies: host<->device, device<->device (peer included) and host<->host, stream-ordered
// on the current stream of the device involved, synchronising as torch's copy_ does.
#include "sanitizer_access.h"
#include "storage.h"
#include "tensor_kernels.h"

#include "../check.h"
#include "../runtime_state.h"

#include <cudascope/cuda/event.h>
#include <cudascope/cuda/host_memory.h>
#include <cudascope/cuda/memory.h>

#include <cstring>
#include <mutex>
#include <set>
#include <utility>

namespace cudascope {
namespace {

namespace cerr = cuda::error_code;
using cuda::detail::CopyKind;
using cuda::detail::TensorKernel;

cuda::Stream stream_of(const Tensor& t) { return cuda::current_stream(t.device().index); }

// dst = src where both views live on the same device (or both on the host): one memcpy when
// both are contiguous, the strided-copy kernel otherwise.
void copy_same_place(const Tensor& dst, const Tensor& src) {
  if (dst.numel() == 0) return;
  detail::declare_accesses("Tensor::copy_", dst.device(), {{&src, "src"}}, {{&dst, "self"}});
  if (dst.is_contiguous() && src.is_contiguous()) {
    if (dst.device().is_cpu()) {
      std::memmove(dst.data_ptr(), src.data_ptr(), dst.nbytes());
      return;
    }
    const cuda::Stream stream = stream_of(dst);
    cuda::detail::lazy_backend().memcpy_async(stream.device_index(), dst.data_ptr(), src.data_ptr(), dst.nbytes(),
                                              CopyKind::kDeviceToDevice, stream.handle());
    return;
  }
  TensorKernel k;
  k.op = TensorKernel::Op::kCopy;
  k.dtype = dst.dtype();
  k.numel = dst.numel();
  k.out = dst.data_ptr();
  k.a = src.data_ptr();
  k.out_layout = detail::layout_of(dst);
  k.a_layout = detail::layout_of(src);
  detail::run_kernel(dst.device(), k);
}

// As torch's get_p2p_access: access from `device` to `peer` is enabled the first time a copy
// needs it, where the hardware allows it. Without it CUDA stages a device-to-device copy
// through the host: still correct, but about 8x slower than NVLink on two H200s.
void ensure_peer_access(int device, int peer) {
  static std::mutex mutex;
  static std::set<std::pair<int, int>> tried;
  std::lock_guard<std::mutex> lock(mutex);
  if (!tried.emplace(device, peer).second) return;
  auto& backend = cuda::detail::lazy_backend();
  if (backend.can_access_peer(device, peer)) backend.enable_peer_access(device, peer);
}

// Between two devices, as torch: the copy runs on the source device's current stream after a
// two-way barrier, so neither side's queued work races it.
void copy_between_devices(const Tensor& dst, const Tensor& src) {
  ensure_peer_access(src.device().index, dst.device().index);
  const Tensor source = src.contiguous();
  const bool direct = dst.is_contiguous();
  const Tensor target = direct ? dst : empty(dst.sizes(), TensorOptions{}.with_dtype(dst.dtype()).with_device(dst.device()));
  const cuda::Stream src_stream = stream_of(source);
  const cuda::Stream dst_stream = stream_of(target);
  cuda::Event dst_ready;
  dst_ready.record(dst_stream);
  dst_ready.wait(src_stream);
  detail::declare_accesses("Tensor::copy_", source.device(), {{&source, "src"}}, {{&target, "self"}});
  cuda::detail::lazy_backend().memcpy_async(src_stream.device_index(), target.data_ptr(), source.data_ptr(),
                                            target.nbytes(), CopyKind::kDeviceToDevice, src_stream.handle());
  cuda::Event src_ready;
  src_ready.record(src_stream);
  src_ready.wait(dst_stream);
  // The source's memory is in use on the source stream only; the target's (when it is a
  // temporary) on the destination stream, where the strided copy below also runs.
  if (!direct) copy_same_place(dst, target);
}

// Host <-> device. Both sides contiguous here.
void copy_host_device(const Tensor& dst, const Tensor& src, bool non_blocking) {
  const bool to_device = dst.is_cuda();
  const Tensor& device_side = to_device ? dst : src;
  const Tensor& host_side = to_device ? src : dst;
  const cuda::Stream stream = stream_of(device_side);
  if (to_device) {
    detail::declare_accesses("Tensor::copy_", dst.device(), {}, {{&dst, "self"}});
  } else {
    detail::declare_accesses("Tensor::copy_", src.device(), {{&src, "src"}}, {});
  }
  cuda::detail::lazy_backend().memcpy_async(stream.device_index(), dst.data_ptr(), src.data_ptr(), dst.nbytes(),
                                            to_device ? CopyKind::kHostToDevice : CopyKind::kDeviceToHost,
                                            stream.handle());
  if (!non_blocking) {
    // torch's memcpy_and_sync: a synchronizing call (sync-debug mode sees it).
    cuda::detail::on_synchronizing_call("cudaStreamSynchronize");
    cuda::detail::lazy_backend().stream_synchronize(stream.device_index(), stream.handle());
    if (cuda::sanitizer::detail::active()) cuda::sanitizer::detail::stream_synchronized(stream.device_index(), stream.id());
    return;
  }
  // Asynchronous: a pinned block must not be handed out again until the copy is done
  // (torch's CachingHostAllocator_recordEvent). Pageable memory is copied synchronously with
  // respect to the host by the driver (the sim backend likewise).
  if (host_side.is_pinned()) cuda::host::record_stream(host_side.data_ptr(), stream);
}

}  // namespace

Tensor& Tensor::copy_(const Tensor& src, bool non_blocking) {
  CUDASCOPE_CHECK(defined() && src.defined(), cerr::kInvalidValue, "Tensor::copy_", "copy_ between undefined tensors");
  CUDASCOPE_CHECK(dtype_ == src.dtype_, cerr::kInvalidValue, "Tensor::copy_",
                  std::string("dtypes differ: ") + dtype_name(dtype_) + " and " + dtype_name(src.dtype_) +
                      " (copy_ does not convert)");
  CUDASCOPE_CHECK(numel() == src.numel(), cerr::kInvalidValue, "Tensor::copy_",
                  "element counts differ: " + std::to_string(numel()) + " and " + std::to_string(src.numel()));
  if (numel() == 0) return *this;
  const Device to = device();
  const Device from = src.device();
  // A differently shaped source of the same count is copied in row-major order, as a view.
  const Tensor source = src.sizes() == sizes_ ? src : src.contiguous().view(sizes_);
  if (to == from) {
    copy_same_place(*this, source);
  } else if (to.is_cuda() && from.is_cuda()) {
    copy_between_devices(*this, source);
  } else if (is_contiguous() && source.is_contiguous()) {
    copy_host_device(*this, source, non_blocking);
  } else if (to.is_cuda()) {
    // Host source not contiguous (made contiguous on the host first) or device target strided.
    const Tensor staged = empty(sizes_, TensorOptions{}.with_dtype(dtype_).with_device(to));
    copy_host_device(staged, source.contiguous(), /*non_blocking=*/false);
    copy_same_place(*this, staged);
  } else {
    // Device -> strided host view: through a contiguous host buffer, then on the host.
    const Tensor staged = empty(sizes_, TensorOptions{}.with_dtype(dtype_));
    copy_host_device(staged, source.contiguous(), /*non_blocking=*/false);
    copy_same_place(*this, staged);
  }
  return *this;
}

Tensor Tensor::to(Device device, bool non_blocking) const {
  Device target = device;
  if (target.is_cuda()) target.index = cuda::detail::resolve_device(target.index);
  if (target == this->device()) return *this;
  // As torch's _to_copy: a non_blocking copy from the GPU lands in pinned memory, so it can
  // actually be asynchronous.
  TensorOptions options;
  options.dtype = dtype_;
  options.device = target;
  options.pin_memory = non_blocking && is_cuda() && target.is_cpu();
  Tensor out = empty(sizes_, options);
  out.copy_(*this, non_blocking);
  return out;
}

Tensor Tensor::pin_memory() const {
  CUDASCOPE_CHECK(defined() && device().is_cpu(), cerr::kInvalidValue, "Tensor::pin_memory",
                  "cannot pin a " + device().str() + " tensor: only CPU tensors can be pinned");
  if (is_pinned()) return *this;
  Tensor out = empty(sizes_, TensorOptions{}.with_dtype(dtype_).pinned());
  out.copy_(*this);
  return out;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  Tensor out = empty(sizes_, TensorOptions{}.with_dtype(dtype_).with_device(device()));
  copy_same_place(out, *this);
  return out;
}

void Tensor::record_stream(const cuda::Stream& stream) const {
  CUDASCOPE_CHECK(is_cuda(), cerr::kInvalidValue, "Tensor::record_stream", "record_stream needs a CUDA tensor");
  // Another process's memory (CUDA IPC) is not this allocator's to keep from reuse: nothing
  // to record, as torch ignores record_stream on memory the caching allocator did not give.
  if (storage_->data() != nullptr && !storage_->is_external()) cuda::record_stream(storage_->data(), stream);
}

}  // namespace cudascope
