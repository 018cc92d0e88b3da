#!/usr/bin/env python3
"""Writes tests/gui/data/snap_convnet_cpp.pickle.gz: a convnet training snapshot in PyTorch's
schema whose stacks carry C++ frames, as `_record_memory_history(stacks="all")` records them
(the unwinder's and caching allocator's frames, the dispatcher's, ATen's and cuDNN's with
their template signatures, then the interpreter and the Python frames), ending in an
out-of-memory entry. Synthetic (no GPU here): the frame texts follow what PyTorch 2.x writes
on Linux; sizes, addresses and timing follow a small ResNet step. Deterministic.

Run: python3 tests/gui/make_cpp_stack_snapshot.py
"""
import gzip
import os
import pickle
import random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "snap_convnet_cpp.pickle.gz")
MiB = 1 << 20


def cpp(name):
    return {"name": name, "filename": "??", "line": 0}


def py(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


ALLOC = [
    cpp("torch::unwind::unwind()"),
    cpp("torch::CapturedTraceback::gather(bool, bool, bool)"),
    cpp("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
    cpp("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)"),
    cpp("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)"),
    cpp("at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)"),
    cpp("at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, std::optional<c10::MemoryFormat>)"),
]
CONV = [
    cpp("at::native::cudnn_convolution(at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, long, bool, bool, bool)"),
    cpp("at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA__cudnn_convolution(at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<long>, c10::SymInt, bool, bool, bool)"),
    cpp("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor (at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<long>, c10::SymInt, bool, bool, bool), &at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA__cudnn_convolution>, at::Tensor, c10::guts::typelist::typelist<at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<long>, c10::SymInt, bool, bool, bool> >, at::Tensor (at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<long>, c10::SymInt, bool, bool, bool)>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor const&, at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<long>, c10::SymInt, bool, bool, bool)"),
    cpp("at::_ops::cudnn_convolution::call(at::Tensor const&, at::Tensor const&, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::SymInt, bool, bool, bool)"),
    cpp("at::native::_convolution(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, bool, c10::ArrayRef<long>, long, bool, bool, bool, bool)"),
    cpp("at::_ops::_convolution::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, bool, c10::ArrayRef<c10::SymInt>, c10::SymInt, bool, bool, bool, bool)"),
    cpp("at::native::convolution(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, bool, c10::ArrayRef<long>, long)"),
    cpp("torch::autograd::VariableType::(anonymous namespace)::convolution(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, bool, c10::ArrayRef<c10::SymInt>, c10::SymInt)"),
    cpp("at::_ops::convolution::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, bool, c10::ArrayRef<c10::SymInt>, c10::SymInt)"),
    cpp("at::native::conv2d_symint(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::SymInt)"),
    cpp("at::_ops::conv2d::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, c10::SymInt)"),
    cpp("torch::autograd::THPVariable_conv2d(_object*, _object*, _object*)"),
]
INTERP = [
    py("_PyEval_EvalFrameDefault", "/usr/local/src/conda/python-3.11.9/Python/ceval.c", 5208),
    py("_conv_forward", "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/conv.py", 549),
    py("forward", "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/conv.py", 554),
    py("_call_impl", "/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py", 1762),
]
TAIL = [py("<module>", "train_convnet.py", 88), cpp("__libc_start_main"), cpp("_start")]


def stack(kind, layer):
    user = [py("forward", "train_convnet.py", 30 + layer), py("train_step", "train_convnet.py", 61)]
    if kind == "conv":
        return ALLOC + CONV + INTERP + user + TAIL
    if kind == "grad":
        return ALLOC + [cpp("at::native::zeros_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)"),
                        cpp("torch::autograd::InputBuffer::add(unsigned long, at::Tensor, std::optional<c10::Stream> const&, std::optional<c10::Stream> const&)"),
                        cpp("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)"),
                        cpp("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
                        py("backward", "/opt/conda/lib/python3.11/site-packages/torch/autograd/__init__.py", 353),
                        py("train_step", "train_convnet.py", 64)] + TAIL
    return ALLOC + [cpp("at::native::empty_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)"),
                    py("step", "/opt/conda/lib/python3.11/site-packages/torch/optim/sgd.py", 123),
                    py("train_step", "train_convnet.py", 66)] + TAIL


def main():
    rnd = random.Random(24)
    t = 1_700_000_000_000_000
    entries, live = [], {}
    segments = []  # [address, size, blocks(dict addr->(size, frames))]
    next_seg = 0x7F0000000000

    def segment_for(size):
        nonlocal next_seg
        for seg in segments:  # first fit in a gap between the segment's live blocks
            cursor = seg[0]
            for baddr in sorted(seg[2]) + [seg[0] + seg[1]]:
                if baddr - cursor >= size:
                    return seg, cursor
                if baddr < seg[0] + seg[1]:
                    cursor = baddr + seg[2][baddr][0]
        total = max(20 * MiB, (size + 2 * MiB - 1) // (2 * MiB) * (2 * MiB))
        seg = [next_seg, total, {}]
        next_seg += total + 64 * MiB
        segments.append(seg)
        entries.append({"action": "segment_alloc", "addr": seg[0], "size": total, "stream": 0, "time_us": t, "frames": stack("conv", 0)})
        return seg, seg[0]

    # Idle start (data loading), then three training steps of growing batch, then an OOM.
    t += 2_000_000
    for step in range(3):
        acts = []
        for layer in range(8):
            t += rnd.randint(200, 900)
            size = (32 * MiB if layer == 3 else rnd.choice([2, 4, 8, 16]) * MiB) * (step + 1) // 2 + 512 * layer
            size = (size + 511) // 512 * 512
            seg, addr = segment_for(size)
            seg[2][addr] = (size, stack("conv", layer))
            entries.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": stack("conv", layer)})
            acts.append((seg, addr, size, stack("conv", layer)))
        for layer in range(4):
            t += rnd.randint(300, 1200)
            size = rnd.choice([4, 8]) * MiB
            seg, addr = segment_for(size)
            seg[2][addr] = (size, stack("grad", layer))
            entries.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": stack("grad", layer)})
            acts.append((seg, addr, size, stack("grad", layer)))
        # Free most activations at the end of the step (keep the 32 MiB one of the last step).
        for seg, addr, size, frames in acts:
            if step == 2 and size >= 32 * MiB:
                continue
            if rnd.random() < 0.85:
                t += rnd.randint(50, 300)
                entries.append({"action": "free_requested", "addr": addr, "size": size, "stream": 0, "time_us": t, "frames": frames})
                entries.append({"action": "free_completed", "addr": addr, "size": size, "stream": 0, "time_us": t + 5, "frames": frames})
                del seg[2][addr]
        t += 50_000
    t += 700
    oom = {"action": "oom", "addr": 0, "size": 12 * 1024 * MiB, "stream": 0, "time_us": t, "frames": stack("conv", 7),
           "device_free": 1536 * MiB}
    entries.append(oom)

    out_segments = []
    for addr, total, blocks in segments:
        blist, cursor, allocated = [], addr, 0
        for baddr in sorted(blocks):
            size, frames = blocks[baddr]
            if baddr > cursor:
                blist.append({"address": cursor, "size": baddr - cursor, "requested_size": 0, "state": "inactive", "frames": []})
            blist.append({"address": baddr, "size": size, "requested_size": size - 100, "state": "active_allocated", "frames": frames})
            allocated += size
            cursor = baddr + size
        if cursor < addr + total:
            blist.append({"address": cursor, "size": addr + total - cursor, "requested_size": 0, "state": "inactive", "frames": []})
        out_segments.append({"device": 0, "address": addr, "total_size": total, "allocated_size": allocated, "active_size": allocated,
                             "requested_size": allocated, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
                             "is_expandable": False, "frames": stack("conv", 0), "blocks": blist})
    snap = {"segments": out_segments, "device_traces": [entries], "allocator_settings": {"expandable_segments": False}}
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with gzip.GzipFile(OUT, "wb", mtime=0) as f:
        pickle.dump(snap, f, protocol=4)
    print(OUT, len(entries), "entries,", len(out_segments), "segments")


if __name__ == "__main__":
    main()
