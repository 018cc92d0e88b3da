#!/usr/bin/env python3
"""Where the CUDA driver places a recorded sequence's cudaMallocs, by what the process did first.

Usage: python3 bench/runtime/placement_probe.py tests/data/replay_NAME.segevents.json.gz...

Each variant runs in a fresh process and replays the sequence's segment events (PyTorch's
segment_alloc/segment_free, recorded by tests/data/make_replay.py) as bare cudaMalloc/cudaFree
through ctypes, after:
  cudart          nothing but context creation (/usr/local/cuda's libcudart)
  cudart+streams  two streams created with cudaStreamCreateWithPriority
  cudart+pool     torch's whole stream pool: 32 slots of 4 priorities (0, -1, -2, -3)
  torch           torch.cuda.init()
  torch+streams   torch.cuda.init() and two torch.cuda.Stream()s, as the recording process
It prints, per variant, the index of the first cudaMalloc whose address (relative to the
first) differs from the recording's. Run it on the card the sequence was recorded on
(segevents' "device"). On an H100 (2026-11-26) only torch+streams followed the recording:
torch's first Stream() creates its whole pool (128 streams), and the driver takes device
memory for each stream.
"""
import ctypes
import gzip
import json
import os
import subprocess
import sys

VARIANTS = ("cudart", "cudart+streams", "cudart+pool", "torch", "torch+streams")


def replay_segments(variant, path):
    if variant.startswith("torch"):
        import torch
        torch.cuda.init()
        torch.cuda.current_stream()
        if variant == "torch+streams":
            [torch.cuda.Stream() for _ in range(2)]
    lib = ctypes.CDLL("/usr/local/cuda/lib64/libcudart.so")
    lib.cudaFree(ctypes.c_void_p(0))  # the context
    priorities = {"cudart+streams": [0, 0], "cudart+pool": [-p for _ in range(32) for p in range(4)]}
    for priority in priorities.get(variant, []):
        stream = ctypes.c_void_p()
        lib.cudaStreamCreateWithPriority(ctypes.byref(stream), 1, priority)  # 1: non-blocking
    placed, by_recorded = [], {}
    for event in json.load(gzip.open(path, "rt"))["events"]:
        if event["action"] == "segment_alloc":
            ptr = ctypes.c_void_p()
            if lib.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(event["size"])) != 0:
                sys.exit(f"cudaMalloc of {event['size']} bytes failed")
            by_recorded[event["addr"]] = ptr.value
            placed.append(ptr.value)
        elif event["action"] == "segment_free":
            lib.cudaFree(ctypes.c_void_p(by_recorded.pop(event["addr"])))
    print(json.dumps(placed))


def relative(addresses):
    return [a - addresses[0] for a in addresses] if addresses else []


def first_difference(a, b):
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None)


def main(paths):
    if not paths:
        sys.exit(__doc__)
    for path in paths:
        log = json.load(gzip.open(path, "rt"))
        recorded = [e["addr"] for e in log["events"] if e["action"] == "segment_alloc"]
        print(f"== {os.path.basename(path)} (recorded on {log['device']}, {len(recorded)} cudaMallocs)")
        for variant in VARIANTS:
            run = subprocess.run([sys.executable, __file__, "--variant", variant, path], capture_output=True, text=True)
            if run.returncode != 0:
                print(f"  {variant:15s} failed: {run.stderr.strip()[-300:]}")
                continue
            placed = json.loads(run.stdout.strip().splitlines()[-1])
            print(f"  {variant:15s} first cudaMalloc placed elsewhere than recorded (relative to the first): "
                  f"{first_difference(relative(recorded), relative(placed))}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--variant":
        replay_segments(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1:])
