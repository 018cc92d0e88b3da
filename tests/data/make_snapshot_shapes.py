#!/usr/bin/env python3
"""Writes small allocator snapshots in the shapes older and newer PyTorch releases give them.

    python3 tests/data/make_snapshot_shapes.py tests/data

Each snapshot is built as a dict (or list) with exactly the keys the writer of that release
puts in it, read from PyTorch's sources:

- snap_shape_pt113.pickle / .json: torch.cuda.memory_snapshot(), which returns the list of
  segments (torch/cuda/memory.py), as THCPModule_memorySnapshot in torch/csrc/cuda/Module.cpp
  builds them before 2.1: no block "address", no "requested_size", no trace times; what was
  requested and where is in each block's "history" (addr, real_size, frames; newest first).
  The JSON file is json.dump of the same list.
- snap_shape_pt20.pickle: torch.cuda.memory._snapshot() of PyTorch 2.0: a dict of
  "segments" (with "requested_size") and "device_traces"; blocks keep "history"; trace
  entries have no "time_us", put "frames" first and "cpp_frames" (C++ frames as strings)
  when recorded, and an "oom" entry has "device_free" instead of "addr".
- snap_shape_latest.pickle / .json: _snapshot() of the newest release (torch/cuda/memory.py's
  _snapshot docstring and Module.cpp): block "address", "requested_size" and "frames",
  "segment_pool_id", "is_expandable", trace "time_us", "compile_context", "user_metadata",
  "pool_id", the "annotate" action of _annotate_memory(), frames with the optional fx_*
  fields, "allocator_settings", "external_annotations", and the "host_segments" /
  "host_traces" keys of record_pinned_host_memory (laid out here as segments and
  device_traces are; their entries are pinned host memory and must not count as a device's).

- snap_shape_expandable.pickle: _snapshot() (2.1 on) under expandable_segments:True: an
  expandable segment, segment_map / segment_unmap entries and a "snapshot" entry.
- snap_shape_docstring.pickle / .json: a snapshot with exactly the keys the TypedDicts in
  _snapshot's docstring give (Segment without "device", TraceEntry without "time_us"), as
  tools that write snapshots from those types do: a block waiting for another stream is
  "active_awaiting_free" there, where the allocator itself writes "active_pending_free".

Trace entries carry what was asked for ("size" of alloc and free entries is the requested
size, as CUDACachingAllocator.cpp records it). The figures the tests expect are counted by
hand from what is written here.
"""
import json
import os
import pickle
import sys

A = 139637976727552  # 0x7f0000000000
B = A + (4 << 20)


def frame(name, filename, line):
    return {"filename": filename, "name": name, "line": line}


TRAIN = [frame("forward", "model.py", 41), frame("train_step", "train.py", 88), frame("<module>", "train.py", 120)]
OPT = [frame("step", "torch/optim/adamw.py", 210), frame("train_step", "train.py", 93)]


def pt113():
    small = {
        "device": 0, "address": A, "total_size": 2097152, "allocated_size": 1024, "active_size": 1536,
        "stream": 0, "segment_type": "small",
        "blocks": [
            {"size": 1024, "state": "active_allocated",
             "history": [{"addr": A, "real_size": 1000, "frames": TRAIN},
                         {"addr": A, "real_size": 24, "frames": OPT}]},
            {"size": 512, "state": "active_pending_free", "history": [{"addr": A + 1024, "real_size": 400, "frames": OPT}]},
            {"size": 2097152 - 1536, "state": "inactive"},
        ],
    }
    large = {
        "device": 0, "address": B, "total_size": 20971520, "allocated_size": 8388608, "active_size": 8388608,
        "stream": 0, "segment_type": "large",
        "blocks": [
            {"size": 8388608, "state": "active_allocated", "history": [{"addr": B, "real_size": 8000000}]},
            {"size": 20971520 - 8388608, "state": "inactive"},
        ],
    }
    return [small, large]


def pt20():
    seg = {
        "device": 0, "address": A, "total_size": 2097152, "allocated_size": 512, "active_size": 512,
        "requested_size": 500, "stream": 0, "segment_type": "small",
        "blocks": [
            {"size": 512, "requested_size": 500, "state": "active_allocated",
             "history": [{"addr": A, "real_size": 500, "frames": TRAIN, "cpp_frames": ["c10::cuda::CUDACachingAllocator::malloc"]}]},
            {"size": 2097152 - 512, "requested_size": 0, "state": "inactive"},
        ],
    }
    trace = [
        {"frames": TRAIN, "action": "segment_alloc", "addr": A, "size": 2097152, "stream": 0},
        {"frames": TRAIN, "action": "alloc", "addr": A, "size": 500, "stream": 0},
        {"action": "alloc", "addr": A + 512, "size": 1024, "stream": 0},
        {"action": "free_requested", "addr": A + 512, "size": 1024, "stream": 0},
        {"action": "free_completed", "addr": A + 512, "size": 1024, "stream": 0},
        {"frames": OPT, "cpp_frames": ["c10::cuda::CUDACachingAllocator::malloc", "at::empty_cuda"],
         "action": "oom", "device_free": 1048576, "size": 85899345920, "stream": 0},
    ]
    return {"segments": [seg], "device_traces": [trace]}


def latest():
    fx = dict(frame("forward", "<eval_with_key>.3", 7), fx_node_op="call_function", fx_node_name="linear",
              fx_original_trace="  File \"model.py\", line 41, in forward")
    stack = [fx] + TRAIN[1:]
    seg = {
        "device": 0, "address": A, "total_size": 2097152, "allocated_size": 1024, "active_size": 1536,
        "requested_size": 1400, "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0),
        "is_expandable": False, "frames": TRAIN,
        "blocks": [
            {"address": A, "size": 1024, "requested_size": 1000, "state": "active_allocated", "frames": stack},
            {"address": A + 1024, "size": 512, "requested_size": 400, "state": "active_pending_free", "frames": OPT},
            {"address": A + 1536, "size": 2097152 - 1536, "requested_size": 0, "state": "inactive", "frames": []},
        ],
    }

    def entry(action, addr, size, t, metadata="", frames=TRAIN):
        return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t, "compile_context": "N/A",
                "user_metadata": metadata, "pool_id": (0, 0), "frames": frames}

    trace = [
        entry("segment_alloc", A, 2097152, 1795305929929000),
        entry("alloc", A, 1000, 1795305929929010, "step 1", stack),
        entry("alloc", A + 1024, 400, 1795305929929020, "step 1", OPT),
        entry("annotate", A, 1000, 1795305929929030, "saved for backward"),
        entry("free_requested", A + 1024, 400, 1795305929929040, "step 1", OPT),
    ]
    host_seg = {
        "device": 0, "address": 140000000000000, "total_size": 4096, "allocated_size": 4096, "active_size": 4096,
        "requested_size": 4096, "stream": 0, "segment_type": "small", "segment_pool_id": (0, 0), "is_expandable": False,
        "frames": [], "blocks": [{"address": 140000000000000, "size": 4096, "requested_size": 4096,
                                  "state": "active_allocated", "frames": []}],
    }
    return {
        "segments": [seg],
        "device_traces": [trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
                               "expandable_segments": False, "roundup_power2_divisions": {"1": 0, "2": 0}},
        "external_annotations": [
            {"stage": "START", "name": "Optimizer.step#AdamW.step", "device": 0, "time_us": 1795305929929025},
            {"stage": "END", "name": "Optimizer.step#AdamW.step", "device": 0, "time_us": 1795305929929035},
        ],
        "host_segments": [host_seg],
        "host_traces": [[entry("alloc", 140000000000000, 4096, 1795305929929015)]],
    }


def expandable():
    # expandable_segments:True (2.1 on): one segment per stream grows and shrinks by mapping
    # pages, recorded as segment_map / segment_unmap; a "snapshot" entry marks when _snapshot()
    # was taken.
    seg = {
        "device": 0, "address": A, "total_size": 4194304, "allocated_size": 3145728, "active_size": 3145728,
        "requested_size": 3000000, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
        "is_expandable": True, "frames": TRAIN,
        "blocks": [
            {"address": A, "size": 1048576, "requested_size": 0, "state": "inactive", "frames": []},
            {"address": A + 1048576, "size": 3145728, "requested_size": 3000000, "state": "active_allocated", "frames": TRAIN},
        ],
    }

    def entry(action, addr, size, t):
        return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t, "compile_context": "N/A",
                "user_metadata": "", "frames": TRAIN}

    trace = [
        entry("segment_map", A, 6291456, 1000),
        entry("alloc", A, 1048576, 1010),
        entry("alloc", A + 1048576, 3000000, 1020),
        entry("free_requested", A, 1048576, 1030),
        entry("free_completed", A, 1048576, 1031),
        entry("segment_unmap", A + 4194304, 2097152, 1040),
        entry("snapshot", 0, 0, 1050),
    ]
    return {"segments": [seg], "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "expandable_segments": True}}


def docstring():
    seg = {
        "address": A, "total_size": 2097152, "stream": 0, "segment_type": "small",
        "allocated_size": 1024, "active_size": 1536,
        "blocks": [
            {"size": 1024, "requested_size": 1000, "address": A, "state": "active_allocated", "frames": TRAIN},
            {"size": 512, "requested_size": 400, "address": A + 1024, "state": "active_awaiting_free", "frames": OPT},
            {"size": 2097152 - 1536, "requested_size": 0, "address": A + 1536, "state": "inactive", "frames": []},
        ],
    }
    trace = [
        {"action": "segment_alloc", "addr": A, "frames": TRAIN, "size": 2097152, "stream": 0},
        {"action": "alloc", "addr": A, "frames": TRAIN, "size": 1000, "stream": 0},
        {"action": "alloc", "addr": A + 1024, "frames": OPT, "size": 400, "stream": 0},
        {"action": "free_requested", "addr": A + 1024, "frames": OPT, "size": 400, "stream": 0},
    ]
    return {"segments": [seg], "device_traces": [trace]}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    files = {
        "snap_shape_pt113.pickle": (pt113(), 4),
        "snap_shape_pt20.pickle": (pt20(), 4),
        "snap_shape_latest.pickle": (latest(), 5),
        "snap_shape_expandable.pickle": (expandable(), 4),
        "snap_shape_docstring.pickle": (docstring(), 4),
    }
    for name, (data, protocol) in files.items():
        with open(os.path.join(out, name), "wb") as f:
            pickle.dump(data, f, protocol=protocol)
    for name, data in {"snap_shape_pt113.json": pt113(), "snap_shape_latest.json": latest(),
                       "snap_shape_docstring.json": docstring()}.items():
        with open(os.path.join(out, name), "w") as f:
            json.dump(data, f, indent=1)


if __name__ == "__main__":
    main()
