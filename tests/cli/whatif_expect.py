#!/usr/bin/env python3
"""Independent figures of a PyTorch memory snapshot, for the `cudascope whatif` test.

  whatif_expect.py SNAPSHOT                 -> JSON: per device the peak reserved bytes the
      snapshot records (its final segments walked back through the trace's segment entries)
      and the number of segment_alloc entries (cudaMalloc calls)
  whatif_expect.py SNAPSHOT --drop N OUT    -> writes OUT (pickle, gzip) with the first N trace
      entries of device 0 removed, as a ring buffer that wrapped would leave it, and prints
      JSON: the blocks live before the new first entry (count and requested bytes) that a
      reader must assume were allocated first

Only Python's pickle, gzip and json modules: nothing shared with cudascope's readers.
"""
import gzip
import json
import pickle
import sys


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data[:1] in (b"{", b"[", b" ", b"\n"):
        return json.loads(data)
    return pickle.loads(data)


def recorded(snap):
    out = {}
    for device, trace in enumerate(snap["device_traces"]):
        if not trace:
            continue
        reserved = sum(s["total_size"] for s in snap["segments"] if s.get("device", 0) == device)
        peak = reserved
        for e in reversed(trace):
            a = e["action"]
            if a in ("segment_alloc", "segment_map"):
                reserved -= e["size"]
            elif a in ("segment_free", "segment_unmap"):
                reserved += e["size"]
            peak = max(peak, reserved)
        out[str(device)] = {
            "peak_reserved_bytes": peak,
            "cuda_malloc_count": sum(1 for e in trace if e["action"] == "segment_alloc"),
        }
    return out


def drop(snap, n, out_path):
    trace = snap["device_traces"][0]
    live = {}
    for e in trace[:n]:
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    snap["device_traces"][0] = trace[n:]
    with gzip.open(out_path, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    return {"live_at_start": len(live), "live_at_start_bytes": sum(live.values())}


def main():
    snap = load(sys.argv[1])
    if len(sys.argv) == 5 and sys.argv[2] == "--drop":
        print(json.dumps(drop(snap, int(sys.argv[3]), sys.argv[4])))
    else:
        print(json.dumps(recorded(snap)))


if __name__ == "__main__":
    main()
