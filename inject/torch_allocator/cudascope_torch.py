"""PyTorch on cudascope's caching allocator: PyTorch's algorithm and statistics, cheaper per
operation, with cudascope's metrics (CUDASCOPE_METRICS=address:port), history with NVTX
ranges, snapshots, and a snapshot on out-of-memory (CUDASCOPE_OOM_SNAPSHOT=path), which turns
the allocator's history on from the first allocation so the snapshot shows what led there
(CUDASCOPE_OOM_HISTORY=stacks adds C++ stacks, =off turns it off; record_memory_history
replaces it).

    import cudascope_torch
    cudascope_torch.enable()          # before the first CUDA tensor
    ...
    print(cudascope_torch.memory_summary())

The allocator is configured by CUDASCOPE_ALLOC_CONF, else PYTORCH_CUDA_ALLOC_CONF (same
syntax). PyTorch's own torch.cuda.memory_stats() and _dump_snapshot() do not work under a
pluggable allocator: use this module's functions of the same names. CUDA graph capture
(torch.cuda.graph, torch.cuda.MemPool) is refused with an error naming what is missing.

Standard library only; libcudascope_torch_allocator.so is found beside this file, or at
CUDASCOPE_TORCH_ALLOCATOR.
"""

import ctypes
import json
import os
import sys
import warnings

__all__ = [
    "enable", "is_enabled", "library_path", "memory_stats", "memory_summary", "dump_snapshot",
    "record_memory_history", "empty_cache", "reset_peak_memory_stats", "memory_allocated",
    "max_memory_allocated", "memory_reserved", "max_memory_reserved",
]

LIBRARY_NAME = "libcudascope_torch_allocator.so"

# The optional hooks of torch's _CUDAPluggableAllocator, each with the entry point serving it.
_HOOKS = (
    ("set_init_fn", "cudascope_torch_init"),
    ("set_reset_fn", "cudascope_torch_empty_cache"),
    ("set_memory_fraction_fn", "cudascope_torch_set_memory_fraction"),
    ("set_base_alloc_fn", "cudascope_torch_base_alloc"),
    ("set_record_stream_fn", "cudascope_torch_record_stream"),
    ("set_begin_allocate_to_pool", "cudascope_torch_begin_allocate_to_pool"),
    ("set_end_allocate_to_pool_fn", "cudascope_torch_end_allocate_to_pool"),
    ("set_release_pool", "cudascope_torch_release_pool"),
)
# Where c10::OutOfMemoryError may be found, in torch's lib directory.
_TORCH_LIBRARIES = ("libc10_cuda.so", "libc10.so", "libtorch_cuda.so", "libtorch_python.so")

_library = None
_allocator = None  # kept alive: torch holds only a shared pointer to its C++ half


def library_path():
    """The allocator library: CUDASCOPE_TORCH_ALLOCATOR, else the one beside this module."""
    path = os.environ.get("CUDASCOPE_TORCH_ALLOCATOR")
    if path:
        if not os.path.isfile(path):
            raise FileNotFoundError(f"CUDASCOPE_TORCH_ALLOCATOR={path}: no such file")
        return path
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), LIBRARY_NAME)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{LIBRARY_NAME} is not beside {os.path.abspath(__file__)}; "
            "set CUDASCOPE_TORCH_ALLOCATOR to its path")
    return path


def _load():
    global _library
    if _library is not None:
        return _library
    lib = ctypes.CDLL(library_path())
    c_int, c_char_p, c_void_p, c_size_t = ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t
    signatures = {
        "cudascope_torch_bind_torch": (c_int, [c_char_p]),
        "cudascope_torch_memory_stats_json": (c_void_p, [c_int]),
        "cudascope_torch_memory_summary": (c_void_p, [c_int, c_int]),
        "cudascope_torch_free_text": (None, [c_void_p]),
        "cudascope_torch_dump_snapshot": (c_int, [c_char_p]),
        "cudascope_torch_record_memory_history": (c_int, [c_char_p, c_char_p, c_char_p, c_size_t]),
        "cudascope_torch_reset_peak_memory_stats": (c_int, [c_int]),
        "cudascope_torch_empty_cache": (None, []),
        "cudascope_torch_last_error": (c_char_p, []),
    }
    for name, (restype, argtypes) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = restype, argtypes
    _library = lib
    return lib


def _error(call):
    message = _load().cudascope_torch_last_error().decode(errors="replace")
    return RuntimeError(f"cudascope_torch.{call}: {message}")


def _text(pointer, call):
    if not pointer:
        raise _error(call)
    try:
        return ctypes.string_at(pointer).decode()
    finally:
        _load().cudascope_torch_free_text(pointer)


def _encode(text):
    return None if text is None else str(text).encode()


def _device_index(device):
    """-1 (the runtime's current device) for None, unless torch has a current device."""
    if device is None:
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            return torch.cuda.current_device()
        return -1
    index = getattr(device, "index", device)
    return -1 if index is None else int(index)


def _bind_torch(lib, torch):
    """Makes an out-of-memory raise torch.OutOfMemoryError (else RuntimeError)."""
    lib_dir = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "lib")
    reasons = []
    for name in _TORCH_LIBRARIES:
        if lib.cudascope_torch_bind_torch(os.path.join(lib_dir, name).encode()):
            return True
        reasons.append(lib.cudascope_torch_last_error().decode(errors="replace"))
    warnings.warn("cudascope_torch: c10::OutOfMemoryError not found in torch "
                  f"({'; '.join(reasons)}): an out-of-memory will raise RuntimeError, "
                  "not torch.OutOfMemoryError")
    return False


def is_enabled():
    return _allocator is not None


def enable():
    """Makes cudascope's caching allocator serve every CUDA allocation of this process.

    Must run before PyTorch initialises CUDA (the first CUDA tensor, torch.cuda.set_device,
    ...): PyTorch cannot swap an allocator that is in use. Calling it again does nothing.
    """
    global _allocator
    if _allocator is not None:
        return
    try:
        import torch
    except ImportError as e:
        raise RuntimeError("cudascope_torch.enable() needs PyTorch (import torch failed: "
                           f"{e})") from e
    backend = os.environ.get("CUDASCOPE_BACKEND", "cuda")
    if backend not in ("cuda", "auto"):
        raise RuntimeError(
            f"cudascope_torch.enable(): CUDASCOPE_BACKEND={backend} would hand PyTorch's kernels "
            "memory that is not on the GPU; unset it (or set cuda) for PyTorch jobs")
    if torch.cuda.is_initialized():
        raise RuntimeError(
            "cudascope_torch.enable() came too late: PyTorch has initialised CUDA, and its "
            "allocator cannot be swapped once in use. Call it before the first CUDA tensor "
            "(right after import torch).")
    path = library_path()
    # torch.cuda.nvtx ranges then reach the allocator's history (NVTX reads this at its
    # first call). A tool already attached (Nsight, cudascope run) keeps them.
    nvtx_tool = os.environ.setdefault("NVTX_INJECTION64_PATH", path)
    if os.path.realpath(nvtx_tool) != os.path.realpath(path):
        warnings.warn(f"cudascope_torch: NVTX_INJECTION64_PATH={nvtx_tool} is another tool: "
                      "torch.cuda.nvtx ranges will not annotate the allocation history")
    lib = _load()
    _bind_torch(lib, torch)
    allocator = torch.cuda.memory.CUDAPluggableAllocator(path, "cudascope_torch_alloc", "cudascope_torch_free")
    hooks = allocator.allocator()
    missing = []
    for setter, symbol in _HOOKS:
        if hasattr(hooks, setter):
            getattr(hooks, setter)(ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value)
        else:
            missing.append(setter)
    if missing:
        warnings.warn(f"cudascope_torch: this torch lacks {', '.join(missing)}; those hooks stay off")
    torch.cuda.memory.change_current_allocator(allocator)
    _allocator = allocator


def memory_stats(device=None):
    """PyTorch's memory_stats keys ("allocated_bytes.all.current", ...), from cudascope's allocator."""
    lib = _load()
    return json.loads(_text(lib.cudascope_torch_memory_stats_json(_device_index(device)), "memory_stats"))


def memory_summary(device=None, abbreviated=False):
    """torch.cuda.memory_summary's table, from cudascope's allocator."""
    lib = _load()
    return _text(lib.cudascope_torch_memory_summary(_device_index(device), int(bool(abbreviated))),
                 "memory_summary")


def dump_snapshot(path):
    """Writes the allocator's snapshot: .json, .pickle (PyTorch's format), optionally .gz.

    Opens in cudascope's viewer (cudascope view PATH) and in pytorch.org/memory_viz.
    """
    if _load().cudascope_torch_dump_snapshot(os.fspath(path).encode()) != 0:
        raise _error("dump_snapshot")


def record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize):
    """torch.cuda.memory._record_memory_history for cudascope's allocator; enabled=None stops.

    Each entry keeps the thread's open NVTX ranges (torch.cuda.nvtx.range) as user_metadata;
    the backward pass, which PyTorch runs on its autograd thread, gets the ranges open on the
    thread that last opened one (the training loop's "backward", say).
    """
    max_entries = min(int(max_entries), 2**64 - 1)
    if _load().cudascope_torch_record_memory_history(_encode(enabled), _encode(context),
                                                     _encode(stacks), max_entries) != 0:
        raise _error("record_memory_history")


def empty_cache():
    """Returns the cached, unused blocks to the device (torch.cuda.empty_cache does the same)."""
    _load().cudascope_torch_empty_cache()


def reset_peak_memory_stats(device=None):
    if _load().cudascope_torch_reset_peak_memory_stats(_device_index(device)) != 0:
        raise _error("reset_peak_memory_stats")


def memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.peak"]
