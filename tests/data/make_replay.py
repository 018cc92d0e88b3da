#!/usr/bin/env python3
"""Records allocation sequences with PyTorch's CUDA caching allocator, for cudascope's
fidelity tests: each sequence is replayed by `cudascope replay` and must give the same
torch.cuda.memory_stats(), key for key.

Writes OUT/replay_<name>.jsonl.gz (a header line with "conf" and, where a memory fraction
is set, "memory_limit" in bytes; then alloc/free/empty_cache/reset_peak ops) and
OUT/replay_<name>.stats.json.gz (PyTorch's memory_stats() after the last op) and
OUT/replay_<name>.segments.json.gz (the address cudaMalloc returned for each segment, in
order: on the sim backend the replay breaks best-fit ties between equal-size blocks by
these, as they broke on the GPU) and OUT/replay_<name>.segevents.json.gz (the device, the
PyTorch and CUDA versions and every segment event of the run in order: segment_alloc /
segment_free (cudaMalloc / cudaFree), segment_map / segment_unmap (expandable segments'
cuMemMap / cuMemUnmap) and oom, each with its address, size and the index of the op during
which it happened; the data the sim's address policy is fitted to and checked against).

Allocations go through torch.cuda.caching_allocator_alloc/delete on the current stream
(index 0) and two side streams (1, 2). Each configuration runs in a fresh process because
PyTorch reads PYTORCH_CUDA_ALLOC_CONF once.

Run on a machine with a GPU:  python3 tests/data/make_replay.py --out tests/data
Sequences kept out of the fitting of the sim's address policy (other seeds and settings,
written as replay_heldout_<name>.*):  python3 tests/data/make_replay.py --out tests/data --heldout
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
# Kept out of the fitting of the sim backend's address policy: new seeds, new settings and
# a profile of repeated sizes (many equal-size free blocks, so many best-fit ties).
HELDOUT = {
    "heldout_default_s11": ("", 11, None, "default"),
    "heldout_expandable_s12": ("expandable_segments:True", 12, None, "default"),
    "heldout_max_split_s13": ("max_split_size_mb:256", 13, None, "default"),
    "heldout_roundup_list_s14": ("roundup_power2_divisions:[32:2,256:4,>:8]", 14, None, "huge"),
    "heldout_gc_s15": ("garbage_collection_threshold:0.8", 15, 0.04, "default"),
    "heldout_mixed_s16": ("", 16, None, "mixed"),
    "heldout_mixed_expandable_s17": ("expandable_segments:True", 17, None, "mixed"),
    "heldout_oom_s18": ("max_split_size_mb:64", 18, 0.03, "mixed"),
}
# Expandable segments under other sizes, stream counts and seeds: the data the sim's mapping of
# expandable segments is checked against (written as replay_expandable_study_<name>.*; the
# first half may be fitted to, the second half is kept out). 5-tuples: the stream count last.
EXPANDABLE_STUDY = {
    "expandable_study_default_st1_s21": ("expandable_segments:True", 21, None, "default", 1),
    "expandable_study_mixed_st2_s22": ("expandable_segments:True", 22, None, "mixed", 2),
    "expandable_study_huge_st3_s23": ("expandable_segments:True", 23, None, "huge", 3),
    "expandable_study_default_st4_s24": ("expandable_segments:True", 24, None, "default", 4),
    "expandable_study_mixed_st1_s25": ("expandable_segments:True", 25, None, "mixed", 1),
    "expandable_study_default_st2_s26": ("expandable_segments:True", 26, None, "default", 2),
    "expandable_study_huge_st4_s27": ("expandable_segments:True", 27, None, "huge", 4),
    "expandable_study_mixed_st3_s28": ("expandable_segments:True,max_split_size_mb:128", 28, None, "mixed", 3),
}
NOPS = 20000
TRACE_ENTRIES = 4_000_000  # the history's ring: far more than a sequence's entries

# The "mixed" profile's repeated sizes: typical tensor sizes, small pool to 150 MiB.
MIXED_SIZES = [512, 2048, 12288, 65536, 262144, 1 << 20, 3 << 20, 4 << 20, 12 << 20, 16 << 20,
               25 << 20, 48 << 20, 64 << 20, 100 << 20, 150 << 20]


def random_size(rng, profile):
    if profile == "mixed" and rng.random() < 0.7:
        return rng.choice(MIXED_SIZES)
    r = rng.random()
    if r < 0.6:
        return int(2 ** rng.uniform(0, 20))             # small pool
    if r < 0.9:
        return int(2 ** rng.uniform(20, 24.5))          # 1 - 24 MiB
    if profile == "huge" and r < 0.95:
        return int(2 ** rng.uniform(28, 29.5))          # 256 - 724 MiB: the bucket list's intervals
    return int(2 ** rng.uniform(24.5, 28))              # 24 - 256 MiB


def make_ops(seed, profile, streams=3):
    rng = random.Random(seed)
    ops, live, next_id = [{"op": "empty_cache"}], [], 0
    for _ in range(NOPS):
        r = rng.random()
        if r < 0.0015:
            ops.append({"op": "empty_cache"})
        elif r < 0.0025:
            ops.append({"op": "reset_peak"})
        elif (r < 0.51 and len(live) < 400) or not live:
            ops.append({"op": "alloc", "id": next_id, "size": random_size(rng, profile), "stream": rng.randrange(streams)})
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
    streams = [torch.cuda.current_stream()] + [torch.cuda.Stream() for _ in range(header.get("streams", 3) - 1)]
    if header.get("fraction") is not None:
        torch.cuda.set_per_process_memory_fraction(header["fraction"], 0)
    # History without stacks: only to read back the segments' addresses.
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python", max_entries=TRACE_ENTRIES)
    ptrs = {}
    after = []  # per op: (reserved bytes mapped so far, unmapped so far, OOMs so far)
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
        s = torch.cuda.memory_stats()
        after.append((s["reserved_bytes.all.allocated"], s["reserved_bytes.all.freed"], s["num_ooms"]))
    stats = dict(torch.cuda.memory_stats())
    trace = torch.cuda.memory._snapshot()["device_traces"][0]
    segments = [e["addr"] for e in trace if e["action"] == "segment_alloc"]
    print(json.dumps({"stats": stats, "segments": segments, "segevents": segment_events(torch, trace, after)}))


SEGMENT_ACTIONS = ("segment_alloc", "segment_free", "segment_map", "segment_unmap", "oom")


def segment_events(torch, trace, after):
    """The trace's segment events in order, each with the index of the op during which it
    happened: the first op after which PyTorch's cumulative reserved bytes (mapped, unmapped)
    and OOM count cover the event (reserved_bytes grows by each segment_alloc/map's size and
    shrinks by each segment_free/unmap's)."""
    props = torch.cuda.get_device_properties(0)
    events, mapped, unmapped, ooms, i = [], 0, 0, 0, 0
    for e in trace:
        action = e["action"]
        if action not in SEGMENT_ACTIONS:
            continue
        # An oom entry carries the device's free bytes instead of an address.
        event = {"action": action, "addr": e.get("addr"), "size": e.get("size", 0), "stream": e.get("stream", 0)}
        if action in ("segment_alloc", "segment_map"):
            mapped += e["size"]
        elif action == "oom":
            ooms += 1
            event["device_free"] = e.get("device_free", e.get("addr"))
        else:
            unmapped += e["size"]
        while i < len(after) and (after[i][0] < mapped or after[i][1] < unmapped or after[i][2] < ooms):
            i += 1
        event["op"] = i if i < len(after) else None
        events.append(event)
    return {"device": props.name, "total_memory": props.total_memory, "torch": torch.__version__,
            "cuda": torch.version.cuda, "complete": len(trace) < TRACE_ENTRIES, "events": events}


def write_json_gz(path, value):
    with gzip.open(path, "wt") as f:
        json.dump(value, f)


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
    parser.add_argument("--segments-of", nargs="*", default=[],
                        help="existing sequences: write their .segments and .segevents files again")
    parser.add_argument("--heldout", action="store_true",
                        help="record the held-out sequences (replay_heldout_*) instead of the fitted ones")
    parser.add_argument("--expandable-study", action="store_true",
                        help="record the expandable-segments study (replay_expandable_study_*) instead")
    args = parser.parse_args()
    for path in args.segments_of:
        with gzip.open(path, "rt") as f:
            conf = json.loads(f.readline()).get("conf", "")
        result = child(path, conf)
        name = os.path.basename(path)[: -len(".jsonl.gz")]
        expected = json.load(gzip.open(path.replace(".jsonl.gz", ".stats.json.gz")))
        same = expected == result["stats"]
        write_json_gz(os.path.join(args.out, name + ".segments.json.gz"), result["segments"])
        write_json_gz(os.path.join(args.out, name + ".segevents.json.gz"), result["segevents"])
        print(name, "segments", len(result["segments"]), "stats reproduced:", same, flush=True)
    if args.segments_of:
        return
    import torch
    total = torch.cuda.mem_get_info(0)[1]
    chosen = EXPANDABLE_STUDY if args.expandable_study else HELDOUT if args.heldout else SEQUENCES
    for name, (conf, seed, fraction, profile, *rest) in chosen.items():
        if args.only and name not in args.only:
            continue
        streams = rest[0] if rest else 3
        header = {"conf": conf, "seed": seed, "nops": NOPS, "streams": streams}
        if fraction is not None:
            header["fraction"] = fraction
            # What PyTorch computes: static_cast<size_t>(fraction * total).
            header["memory_limit"] = int(fraction * total)
        path = os.path.join(args.out, f"replay_{name}.jsonl.gz")
        with gzip.open(path, "wt") as f:
            f.write(json.dumps(header) + "\n")
            for op in make_ops(seed, profile, streams):
                f.write(json.dumps(op) + "\n")
        result = child(path, conf)
        stats = result["stats"]
        with gzip.open(os.path.join(args.out, f"replay_{name}.stats.json.gz"), "wt") as f:
            json.dump(dict(sorted(stats.items())), f, indent=1)
        write_json_gz(os.path.join(args.out, f"replay_{name}.segments.json.gz"), result["segments"])
        write_json_gz(os.path.join(args.out, f"replay_{name}.segevents.json.gz"), result["segevents"])
        print(name, "reserved peak", stats["reserved_bytes.all.peak"], "ooms", stats["num_ooms"], flush=True)


if __name__ == "__main__":
    main()
