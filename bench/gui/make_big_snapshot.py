#!/usr/bin/env python3
"""Grows the real H200 fixture into a snapshot with about N trace entries, for benchmarks.

The fixture's steady-state work (every allocation that is also freed within the trace) is
repeated before the original trace, as earlier training iterations would have produced it:

    [segment_alloc entries of the fixture, hoisted to the start]
    [copy 1 of the freed-within-the-trace entries] ... [copy K]
    [the fixture's own trace, without its segment_allocs]

Each copy starts and ends with no allocation live, so addresses never collide, and the
final state is exactly the fixture's: its segments and blocks are kept as they are.
Frames are shared objects, as in PyTorch's own dumps.

Usage: make_big_snapshot.py OUT.pickle [--entries 1000000] [--protocol 4] [--gzip]
"""
import argparse
import gzip
import os
import pickle

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data",
                       "snap_transformer_p4.pickle.gz")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--protocol", type=int, default=4)
    ap.add_argument("--gzip", action="store_true")
    args = ap.parse_args()

    with gzip.open(FIXTURE, "rb") as f:
        snap = pickle.load(f)
    trace = snap["device_traces"][0]

    # Allocations freed within the trace: their alloc, free_requested and free_completed.
    open_alloc = {}
    freed = set()
    for i, e in enumerate(trace):
        if e["action"] == "alloc":
            open_alloc[e["addr"]] = i
        elif e["action"] == "free_completed" and e["addr"] in open_alloc:
            freed.add(open_alloc.pop(e["addr"]))
    keep = []
    live = {}
    for i, e in enumerate(trace):
        a = e["action"]
        if a == "alloc" and i in freed:
            live[e["addr"]] = True
            keep.append(e)
        elif a in ("free_requested", "free_completed") and e["addr"] in live:
            keep.append(e)
            if a == "free_completed":
                del live[e["addr"]]

    segment_allocs = [e for e in trace if e["action"] == "segment_alloc"]
    rest = [e for e in trace if e["action"] != "segment_alloc"]
    t0, t1 = trace[0]["time_us"], trace[-1]["time_us"]
    period = (t1 - t0) + 1000
    copies = max(0, -(-(args.entries - len(trace)) // len(keep)))  # enough to reach N
    start = t0 - copies * period

    out = [dict(e, time_us=start) for e in segment_allocs]
    for k in range(copies):
        shift = start + k * period - t0
        for e in keep:
            d = dict(e)  # a distinct dict per entry, sharing the frames list
            d["time_us"] = e["time_us"] + shift
            out.append(d)
    out.extend(rest)
    snap["device_traces"] = [out]

    opener = gzip.open if args.gzip else open
    with opener(args.out, "wb") as f:
        pickle.dump(snap, f, protocol=args.protocol)
    print(f"{args.out}: {len(out)} trace entries ({copies} copies of {len(keep)}), "
          f"{os.path.getsize(args.out)} bytes")


if __name__ == "__main__":
    main()
