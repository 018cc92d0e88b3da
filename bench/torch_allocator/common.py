"""Shared by the GPU comparison scripts: choosing the allocator at process start and reading
each allocator's figures."""

import os


def use_allocator(name):
    """'pytorch' (PyTorch's caching allocator) or 'cudascope' (libcudascope_torch_allocator.so).
    Call right after import torch, before any CUDA tensor."""
    if name == "cudascope":
        import cudascope_torch
        cudascope_torch.enable()
    elif name != "pytorch":
        raise SystemExit(f"unknown allocator {name!r}: pytorch or cudascope")


def memory_stats(name):
    import torch
    if name == "cudascope":
        import cudascope_torch
        return cudascope_torch.memory_stats(0)
    return torch.cuda.memory_stats(0)


def conf():
    return os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
