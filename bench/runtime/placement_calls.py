#!/usr/bin/env python3
"""Which CUDA calls our replay makes before its first cudaMalloc that PyTorch's does not.

Usage (GPU machine, from the repository root):
  python3 bench/runtime/placement_calls.py BUILD/cli/cudascope tests/data/replay_NAME.jsonl.gz

Records, under `cudascope run --activities runtime,driver`, the same sequence replayed by
`cudascope replay` and by PyTorch (tests/data/make_replay.py --child), then prints for each the
driver and runtime calls made before its first device allocation (cuMemAlloc*, cudaMalloc),
counted by name, and the names whose counts differ. A call that takes device memory (a stream,
a module load, a pinned buffer) before the first cudaMalloc moves where the driver places it,
which is why a replay's segments can sit elsewhere than PyTorch's (bench/runtime/placement_probe.py
shows where they part; bench/results/gpu-verification.md what was found).
"""
import collections
import gzip
import json
import os
import subprocess
import sys
import tempfile

FIRST_ALLOCATION = ("cuMemAlloc", "cudaMalloc")


def calls_before_first_allocation(trace_path):
    with gzip.open(trace_path, "rt") as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    api = sorted((e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"),
                 key=lambda e: e["ts"])
    counts = collections.Counter()
    for event in api:
        name = event["name"]
        if name.startswith(FIRST_ALLOCATION) and not name.startswith(("cudaMallocHost", "cuMemAllocHost")):
            return counts, name
        counts[f"{event['cat']}: {name}"] += 1
    return counts, None


# Calls that ask the driver a question only: left out of the sequence between allocations.
QUERIES = ("cudaGetDevice", "cuDeviceGetAttribute", "cuDevicePrimaryCtxGetState", "cuCtxGetCurrent",
           "cudaGetLastError", "cudaStreamGetId", "cuDeviceGet")


def calls_between_first_allocations(trace_path, allocations):
    """The calls from the first device allocation to the one after the ALLOCATIONS-th, in order."""
    with gzip.open(trace_path, "rt") as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    api = sorted((e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver") and e.get("ph") == "X"),
                 key=lambda e: e["ts"])
    sequence, seen = [], 0
    for event in api:
        name = event["name"]
        is_allocation = name.startswith(FIRST_ALLOCATION) and not name.startswith(("cudaMallocHost", "cuMemAllocHost"))
        seen += is_allocation
        if seen == 0 or name.startswith(QUERIES):
            continue
        if seen > allocations:
            break
        sequence.append(name)
    return sequence


def record(cli, out, command):
    env = dict(os.environ, CUDASCOPE_BACKEND="cuda")
    run = subprocess.run([cli, "run", "--activities", "runtime,driver", "-o", out, "--"] + command,
                         env=env, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"{' '.join(command)}: exit {run.returncode}\n{run.stderr[-2000:]}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    cli, sequence = os.path.realpath(sys.argv[1]), sys.argv[2]
    conf = json.loads(gzip.open(sequence, "rt").readline()).get("conf", "")
    with tempfile.TemporaryDirectory() as tmp:
        ours, torchs = os.path.join(tmp, "ours.json.gz"), os.path.join(tmp, "torch.json.gz")
        record(cli, ours, [cli, "replay", sequence])
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = conf
        record(cli, torchs, [sys.executable, "tests/data/make_replay.py", "--child", sequence])
        results = {"cudascope replay": calls_before_first_allocation(ours),
                   "PyTorch": calls_before_first_allocation(torchs)}
        between = {"cudascope replay": calls_between_first_allocations(ours, 4),
                   "PyTorch": calls_between_first_allocations(torchs, 4)}
    for who, (counts, first) in results.items():
        print(f"== {who}: {sum(counts.values())} calls before the first device allocation ({first})")
        for name, n in sorted(counts.items()):
            print(f"  {n:5d}  {name}")
    for who, sequence in between.items():
        print(f"== {who}: calls from the first to the fifth device allocation, queries left out")
        print("  " + " ".join(sequence))
    ours_counts, torch_counts = results["cudascope replay"][0], results["PyTorch"][0]
    print("== counts that differ (cudascope replay / PyTorch)")
    for name in sorted(set(ours_counts) | set(torch_counts)):
        if ours_counts[name] != torch_counts[name]:
            print(f"  {ours_counts[name]:5d} / {torch_counts[name]:5d}  {name}")


if __name__ == "__main__":
    main()
