#!/usr/bin/env python3
"""Writes the inputs of the viewer's figures for names of any length (bench/results/gui.md):

  trace_huge.json     an NVTX-style annotation and a kernel sharing one 40,000,010-character
                      name, and a small kernel (80 MB)
  trace_many.json     100,000 kernels of distinct 1,014-character names (a 1,000-character
                      common prefix, then a number), in random order (114 MB)
  snap_huge.pickle    an allocator snapshot of 3 allocations, the second from a frame named by
                      the 40 MB name (40 MB: frame lists are shared objects, so the pickle
                      holds each name once)
  snap_many.pickle    100,000 allocations, each from a frame of its own 1,012-character name

Deterministic. Not checked in (hundreds of MB); the gui tests build smaller ones in memory.
Run: python3 tests/gui/make_huge_name_inputs.py OUT_DIR
"""
import json
import os
import pickle
import random
import sys

HUGE = "huge_name_" + "x" * 40_000_000
N = 100_000
CPP = lambda name: {"name": name, "filename": "??", "line": 0}
ALLOC = [CPP("torch::unwind::unwind()"),
         CPP("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)")]
TAIL = [{"name": "<module>", "filename": "train.py", "line": 40}, CPP("_start")]
GPU = {"ph": "M", "name": "process_name", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}


def write_trace(path, events):
    with open(path, "w") as f:
        f.write("[\n" + ",\n".join(json.dumps(e) for e in events) + "\n]\n")


def kernel(name, ts, dur):
    return {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur, "pid": 0, "tid": 7,
            "args": {"stream": 7, "device": 0}}


def write_snapshot(path, user_frames, block=512):
    """One allocation and one live block per user frame, tiling one segment."""
    base, entries, blocks = 1 << 32, [], []
    for i, user in enumerate(user_frames):
        frames = ALLOC + [user] + TAIL
        addr = base + i * block
        entries.append({"action": "alloc", "addr": addr, "size": block, "stream": 0, "time_us": 10 + i, "frames": frames})
        blocks.append({"address": addr, "size": block, "requested_size": block, "state": "active_allocated", "frames": frames})
    total = block * len(user_frames)
    segment = {"device": 0, "address": base, "total_size": total, "allocated_size": total, "active_size": total,
               "requested_size": total, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
               "is_expandable": False, "frames": entries[0]["frames"], "blocks": blocks}
    with open(path, "wb") as f:
        pickle.dump({"segments": [segment], "device_traces": [entries], "allocator_settings": {}}, f, protocol=4)


def main():
    out = sys.argv[1]
    order = list(range(N))
    random.Random(7).shuffle(order)
    write_trace(os.path.join(out, "trace_huge.json"), [
        GPU,
        {"ph": "X", "cat": "user_annotation", "name": HUGE, "ts": 0, "dur": 100, "pid": 1, "tid": 1},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 10, "dur": 5, "pid": 1, "tid": 1,
         "args": {"correlation": 1}},
        dict(kernel(HUGE, 20, 50), args={"correlation": 1, "stream": 7, "device": 0}),  # the launch's kernel
        kernel("small_kernel", 80, 5)])
    prefix = "kernel_" + "y" * 1000 + "_"
    write_trace(os.path.join(out, "trace_many.json"),
                [GPU] + [kernel(prefix + "%06d" % order[i], 10 * i, 5 + i % 3) for i in range(N)])
    write_snapshot(os.path.join(out, "snap_huge.pickle"),
                   [{"name": "train_step", "filename": "train.py", "line": 12},
                    {"name": HUGE, "filename": "train.py", "line": 13},
                    {"name": "eval_step", "filename": "train.py", "line": 14}])
    write_snapshot(os.path.join(out, "snap_many.pickle"),
                   [{"name": "step_" + "z" * 1000 + "_%06d" % order[i], "filename": "train.py", "line": i} for i in range(N)])


if __name__ == "__main__":
    main()
