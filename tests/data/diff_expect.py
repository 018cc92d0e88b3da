#!/usr/bin/env python3
"""What `cudascope diff A B` should report, computed with Python's own json, pickle and gzip
modules as the independent reference the diff tests compare against.

Snapshots (PyTorch pickles or JSON): peak reserved and peak allocated (the final state walked
back through the trace: segments for reserved, alloc..free_completed at the sizes the trace
records for allocated, per device, summed), final reserved and allocated, external
fragmentation in percent, live bytes by NVTX range (an alloc entry's user_metadata, else the
innermost external_annotations START/END range open at its time) and the live total.

Traces (Chrome/Kineto JSON): per kernel name, per NVTX/user_annotation range name (X events,
and B/E pairs per thread) and per copy kind: count, total ns, bytes (copies), and the noise of B - A,
sqrt(nA*varA + nB*varB) with sample variances of the per-instance durations (a side with one
instance borrows the other's; none when neither has two).

Usage: diff_expect.py A B > expect.json   (standard library only)
"""
import collections
import gzip
import json
import math
import pickle
import statistics
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data[:1] == b"\x80":
        return "snapshot", pickle.loads(data)
    doc = json.loads(data)
    if isinstance(doc, dict) and "segments" in doc:
        return "snapshot", doc
    return "trace", doc


# ---- snapshots ----

def peaks(snap):
    reserved_peak = allocated_peak = 0
    traces = snap.get("device_traces", [])
    devices = sorted({s["device"] for s in snap["segments"]} | {d for d, t in enumerate(traces) if t})
    for device in devices:
        segs = [s for s in snap["segments"] if s["device"] == device]
        reserved = sum(s["total_size"] for s in segs)
        live = sum(b["requested_size"] for s in segs for b in s["blocks"] if b["state"] != "inactive")
        peak_r, peak_l = reserved, live
        for e in reversed(traces[device] if device < len(traces) else []):
            a, size = e["action"], e["size"]
            if a == "alloc":
                live -= size
            elif a == "free_completed":
                live += size
            elif a in ("segment_alloc", "segment_map"):
                reserved -= size
            elif a in ("segment_free", "segment_unmap"):
                reserved += size
            else:
                continue
            peak_r, peak_l = max(peak_r, reserved), max(peak_l, live)
        reserved_peak += peak_r
        allocated_peak += peak_l
    return reserved_peak, allocated_peak


def nvtx_groups(snap):
    intervals, open_ = [], collections.defaultdict(list)
    for a in snap.get("external_annotations", []):
        key = (a["device"], a["name"])
        if a["stage"] == "START":
            open_[key].append(a["time_us"])
        elif a["stage"] == "END" and open_[key]:
            intervals.append((a["device"], open_[key].pop(), a["time_us"], a["name"]))
    for (device, name), starts in open_.items():
        intervals += [(device, s, math.inf, name) for s in starts]
    last_alloc = {}
    for device, trace in enumerate(snap.get("device_traces", [])):
        for e in trace:
            if e["action"] == "alloc":
                last_alloc[(device, e["addr"])] = e
    groups = collections.Counter()
    for s in snap["segments"]:
        for b in s["blocks"]:
            if b["state"] == "inactive":
                continue
            e = last_alloc.get((s["device"], b["address"]))
            if e is None:
                groups["<allocated before the trace>"] += b["size"]
                continue
            if e.get("user_metadata"):
                groups[e["user_metadata"]] += b["size"]
                continue
            inside = [iv for iv in intervals if iv[0] == s["device"] and iv[1] <= e["time_us"] <= iv[2]]
            groups[max(inside, key=lambda iv: iv[1])[3] if inside else "<no NVTX range>"] += b["size"]
    return dict(groups)


def snapshot_figures(snap):
    blocks = [b for s in snap["segments"] for b in s["blocks"]]
    inactive = [b["size"] for b in blocks if b["state"] == "inactive"]
    frag = 100.0 * (1 - max(inactive) / sum(inactive)) if sum(inactive) else 0.0
    peak_reserved, peak_allocated = peaks(snap)
    return {"peak_reserved_bytes": peak_reserved, "peak_allocated_bytes": peak_allocated,
            "reserved_bytes": sum(s["total_size"] for s in snap["segments"]),
            "allocated_bytes": sum(s["allocated_size"] for s in snap["segments"]),
            "fragmentation_percent": frag,
            "live_bytes": sum(b["size"] for b in blocks if b["state"] != "inactive"),
            "by_nvtx_range": nvtx_groups(snap)}


# ---- traces ----

def durations(doc):
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    kernels, ranges, copies = (collections.defaultdict(list) for _ in range(3))
    copy_bytes = collections.Counter()
    open_ranges = collections.defaultdict(list)  # (pid, tid) -> open B events, innermost last
    for e in events:
        if e.get("ph") == "B":
            open_ranges[(e.get("pid"), e.get("tid"))].append(e)
            continue
        if e.get("ph") == "E":
            stack = open_ranges[(e.get("pid"), e.get("tid"))]
            if stack:
                begin = stack.pop()
                if begin.get("cat") == "nvtx":
                    ranges[begin.get("name", "")].append(round(float(e["ts"]) * 1000) - round(float(begin["ts"]) * 1000))
            continue
        if e.get("ph") != "X":
            continue
        cat, name, ns = e.get("cat", ""), e.get("name", ""), round(float(e.get("dur", 0)) * 1000)
        if cat == "kernel":
            kernels[name].append(ns)
        elif cat in ("gpu_memcpy", "gpu_memset"):
            kind = "Memset" if cat == "gpu_memset" else name.removeprefix("Memcpy ").split(" ")[0]
            copies[kind].append(ns)
            copy_bytes[kind] += max(0, int((e.get("args") or {}).get("bytes", 0)))
        elif cat in ("nvtx", "user_annotation"):
            ranges[name].append(ns)
    return kernels, ranges, copies, copy_bytes


def rows(a, b):
    out = {}
    for name in sorted(set(a) | set(b)):
        va, vb = a.get(name, []), b.get(name, [])
        var_a = statistics.variance(va) if len(va) > 1 else None
        var_b = statistics.variance(vb) if len(vb) > 1 else None
        var_a = var_b if var_a is None else var_a
        var_b = var_a if var_b is None else var_b
        noise = None if var_a is None else math.sqrt(len(va) * var_a + len(vb) * var_b)
        out[name] = {"count_a": len(va), "count_b": len(vb), "a_ns": sum(va), "b_ns": sum(vb), "noise_ns": noise}
    return out


def main():
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    (kind_a, a), (kind_b, b) = read(sys.argv[1]), read(sys.argv[2])
    if kind_a != kind_b:
        print("files of two kinds", file=sys.stderr)
        return 2
    if kind_a == "snapshot":
        result = {"kind": "snapshot", "a": snapshot_figures(a), "b": snapshot_figures(b)}
    else:
        ka, ra, ca, ba = durations(a)
        kb, rb, cb, bb = durations(b)
        copies = rows(ca, cb)
        for kind, row in copies.items():
            row["bytes_a"], row["bytes_b"] = ba[kind], bb[kind]
        result = {"kind": "trace", "kernels": rows(ka, kb), "nvtx_ranges": rows(ra, rb), "copies": copies}
    json.dump(result, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
