#!/usr/bin/env python3
"""Records allocation sequences with PyTorch's CUDA caching allocator, for cudascope's
fidelity tests: each sequence is replayed by `cudascope replay` and must give the same
torch.cuda.memory_stats(), key for key.

Writes OUT/replay_<name>.jsonl.gz (a header line with "conf" and, where a memory fraction
is set, "memory_limit" in bytes; then alloc/free/empty_cache/reset_peak ops) and
OUT/replay_<name>.stats.json.gz (PyTorch's memory_stats() after the last op) and
OUT/replay_<name>.segments.json.gz (the address cudaMalloc returned for each segment, in
order: on the sim backend the replay breaks best-fit ties between equal-size blocks by
these, as they broke on the GPU).

Allocations go through torch.cuda.caching_allocator_alloc/delete on the current stream
(index 0) and two side streams (1, 2). Each configuration runs in a fresh process because
PyTorch reads PYTORCH_CUDA_ALLOC_CONF once.

Run on a machine with a GPU:  python3 tests/data/make_replay.py --out tests/data
For an existing sequence, only the segment addresses (its stats must come out the same):
  python3 tests/data/make_replay.py --out tests/data --segments-of tests/data/replay_default_s1.jsonl.gz
"""
import argparse
import gzip
import json
import os
import random
import subprocess
import sys

# name -> (PYTORCH_CUDA_ALLOC_CONF, seed, memory fraction or None, size profile)
SEQUENCES = {
    "max_split_s2": ("max_split_size_mb:64", 2, None, "default"),
    "roundup_int_s3": ("roundup_power2_divisions:4", 3, None, "default"),
    "roundup_list_s4": ("roundup_power2_divisions:[256:1,512:2,>:8]", 4, None, "huge"),
    "expandable_s5": ("expandable_segments:True", 5, None, "default"),
    "gc_s6": ("garbage_collection_threshold:0.6", 6, 0.05, "default"),
    "combined_s7": ("max_split_size_mb:128,roundup_power2_divisions:[64:8,>:2]", 7, None, "default"),
}
NOPS = 20000


def random_size(rng, profile):
    r = rng.random()
    if r < 0.6:
        return int(2 ** rng.uniform(0, 20))             # small pool
    if r < 0.9:
        return int(2 ** rng.uniform(20, 24.5))          # 1 - 24 MiB
    if profile == "huge" and r < 0.95:
        return int(2 ** rng.uniform(28, 29.5))          # 256 - 724 MiB: the bucket list's intervals
    return int(2 ** rng.uniform(24.5, 28))              # 24 - 256 MiB


def make_ops(seed, profile):
    rng = random.Random(seed)
    ops, live, next_id = [{"op": "empty_cache"}], [], 0
    for _ in range(NOPS):
        r = rng.random()
        if r < 0.0015:
            ops.append({"op": "empty_cache"})
        elif r < 0.0025:
            ops.append({"op": "reset_peak"})
        elif (r < 0.51 and len(live) < 400) or not live:
            ops.append({"op": "alloc", "id": next_id, "size": random_size(rng, profile), "stream": rng.randrange(3)})
            live.append(next_id)
            next_id += 1
        else:
            ops.append({"op": "free", "id": live.pop(rng.randrange(len(live)))})
    return ops


def run_child(path):
    """Replays the ops file in this (fresh) process with PyTorch and prints the stats."""
    import torch
    with gzip.open(path, "rt") as f:
        header = json.loads(f.readline())
        ops = [json.loads(line) for line in f]
    torch.cuda.init()
    streams = [torch.cuda.current_stream(), torch.cuda.Stream(), torch.cuda.Stream()]
    if header.get("fraction") is not None:
        torch.cuda.set_per_process_memory_fraction(header["fraction"], 0)
    # History without stacks: only to read back the segments' addresses.
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=4_000_000)
    ptrs = {}
    for op in ops:
        kind = op["op"]
        if kind == "alloc":
            try:
                ptrs[op["id"]] = torch.cuda.caching_allocator_alloc(op["size"], 0, streams[op["stream"]])
            except torch.OutOfMemoryError:
                pass
        elif kind == "free":
            if op["id"] in ptrs:
                torch.cuda.caching_allocator_delete(ptrs.pop(op["id"]))
        elif kind == "empty_cache":
            torch.cuda.empty_cache()
        elif kind == "reset_peak":
            torch.cuda.reset_peak_memory_stats()
    stats = dict(torch.cuda.memory_stats())
    trace = torch.cuda.memory._snapshot()["device_traces"][0]
    segments = [e["addr"] for e in trace if e["action"] == "segment_alloc"]
    print(json.dumps({"stats": stats, "segments": segments}))


def child(path, conf):
    env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF=conf)
    out = subprocess.run([sys.executable, __file__, "--child", path], env=env, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        return run_child(sys.argv[2])
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--segments-of", nargs="*", default=[])
    args = parser.parse_args()
    for path in args.segments_of:
        with gzip.open(path, "rt") as f:
            conf = json.loads(f.readline()).get("conf", "")
        result = child(path, conf)
        name = os.path.basename(path)[: -len(".jsonl.gz")]
        expected = json.load(gzip.open(path.replace(".jsonl.gz", ".stats.json.gz")))
        same = expected == result["stats"]
        with gzip.open(os.path.join(args.out, name + ".segments.json.gz"), "wt") as f:
            json.dump(result["segments"], f)
        print(name, "segments", len(result["segments"]), "stats reproduced:", same, flush=True)
    if args.segments_of:
        return
    import torch
    total = torch.cuda.mem_get_info(0)[1]
    for name, (conf, seed, fraction, profile) in SEQUENCES.items():
        if args.only and name not in args.only:
            continue
        header = {"conf": conf, "seed": seed, "nops": NOPS, "streams": 3}
        if fraction is not None:
            header["fraction"] = fraction
            # What PyTorch computes: static_cast<size_t>(fraction * total).
            header["memory_limit"] = int(fraction * total)
        path = os.path.join(args.out, f"replay_{name}.jsonl.gz")
        with gzip.open(path, "wt") as f:
            f.write(json.dumps(header) + "\n")
            for op in make_ops(seed, profile):
                f.write(json.dumps(op) + "\n")
        result = child(path, conf)
        stats = result["stats"]
        with gzip.open(os.path.join(args.out, f"replay_{name}.stats.json.gz"), "wt") as f:
            json.dump(dict(sorted(stats.items())), f, indent=1)
        with gzip.open(os.path.join(args.out, f"replay_{name}.segments.json.gz"), "wt") as f:
            json.dump(result["segments"], f)
        print(name, "reserved peak", stats["reserved_bytes.all.peak"], "ooms", stats["num_ooms"], flush=True)


if __name__ == "__main__":
    main()
