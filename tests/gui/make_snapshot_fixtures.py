#!/usr/bin/env python3
"""Derives the viewer's test fixtures from the real PyTorch snapshot in tests/data.

Writes, next to snap_transformer_p4.pickle.gz:
  snap_transformer_p2.pickle.gz   the same data pickled with protocol 2
  snap_transformer_p5.pickle.gz   ... with protocol 5
  snap_transformer.json.gz        ... as JSON (tuples become arrays)
  snap_small_p5.pickle            a small, uncompressed cut (first segments, first entries)
  snap_small.json                 the same cut as plain JSON
  snap_*.stats.json               figures computed here, independently of the C++ code

Python's own pickle module is the reference: plain dicts, lists, strings and numbers only.
Run: python3 tests/gui/make_snapshot_fixtures.py
"""
import collections
import gzip
import json
import os
import pickle
import pickletools

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")


def figures(snap):
    segments = snap["segments"]
    traces = snap.get("device_traces", [])
    blocks = [b for s in segments for b in s["blocks"]]
    entries = [e for t in traces for e in t]
    inactive = [b["size"] for b in blocks if b["state"] == "inactive"]
    inactive_bytes = sum(inactive)
    largest = max(inactive, default=0)
    streams = {}
    for s in segments:
        f = streams.setdefault(s["stream"], collections.Counter())
        f["segments"] += 1
        f["blocks"] += len(s["blocks"])
        f["reserved_bytes"] += s["total_size"]
        f["allocated_bytes"] += s["allocated_size"]
        f["active_bytes"] += s["active_size"]
        for b in s["blocks"]:
            if b["state"] == "inactive":
                f["inactive_bytes"] += b["size"]
                f["largest_free_block"] = max(f["largest_free_block"], b["size"])
    for e in entries:
        streams.setdefault(e["stream"], collections.Counter())["trace_entries"] += 1
    keys = ["segments", "blocks", "trace_entries", "reserved_bytes", "allocated_bytes", "active_bytes",
            "inactive_bytes", "largest_free_block"]
    frames = {(f["name"], f["filename"], f["line"]) for e in entries for f in e["frames"]}
    frames |= {(f["name"], f["filename"], f["line"]) for b in blocks for f in b["frames"]}

    # Active and reserved bytes after selected entries of device 0, by undoing the later
    # entries from the final state (the snapshot's segments are the state at the end).
    checkpoints = {}
    checkpoints_peak = None
    if traces and traces[0]:
        t = traces[0]
        active = sum(s["active_size"] for s in segments if s.get("device", 0) == 0)
        reserved = sum(s["total_size"] for s in segments if s.get("device", 0) == 0)
        wanted = sorted({0, 1, len(t) // 3, len(t) // 2, len(t) - 2, len(t) - 1} - {-1})
        after = {}
        peak = active
        for i in range(len(t) - 1, -1, -1):
            after[i] = (active, reserved)
            e = t[i]
            a = e["action"]
            if a == "alloc":
                active -= e["size"]
            elif a == "free_completed":
                active += e["size"]
            elif a in ("segment_alloc", "segment_map"):
                reserved -= e["size"]
            elif a in ("segment_free", "segment_unmap"):
                reserved += e["size"]
            peak = max(peak, active)
        checkpoints_peak = peak
        checkpoints = {str(i): {"active_bytes": after[i][0], "reserved_bytes": after[i][1]} for i in wanted if i >= 0}

    return {
        "segments": len(segments),
        "blocks": len(blocks),
        "trace_entries": len(entries),
        "reserved_bytes": sum(s["total_size"] for s in segments),
        "allocated_bytes": sum(s["allocated_size"] for s in segments),
        "active_bytes": sum(s["active_size"] for s in segments),
        "requested_bytes": sum(s["requested_size"] for s in segments),
        "inactive_bytes": inactive_bytes,
        "largest_free_block": largest,
        "internal_fragmentation_bytes": sum(b["size"] - b["requested_size"] for b in blocks
                                            if b["state"] == "active_allocated" and b["size"] > b["requested_size"]),
        "external_fragmentation_ratio": (1.0 - largest / inactive_bytes) if inactive_bytes else 0.0,
        "oom_entries": sum(1 for e in entries if e["action"] == "oom"),
        "actions": dict(collections.Counter(e["action"] for e in entries)),
        "streams": [dict({"stream": k}, **{key: v.get(key, 0) for key in keys[:1] + keys[1:] if key != "trace_entries"},
                         trace_entries=v.get("trace_entries", 0))
                    for k, v in sorted(streams.items())],
        "distinct_frames": len(frames),
        "first_entry": {k: entries[0][k] for k in ("action", "addr", "size", "time_us")} if entries else None,
        "last_entry": {k: entries[-1][k] for k in ("action", "addr", "size", "time_us")} if entries else None,
        "first_entry_top_frame": entries[0]["frames"][0] if entries and entries[0]["frames"] else None,
        "after_entry": checkpoints,
        "peak_active_bytes": checkpoints_peak,
    }


def jsonable(obj):
    if isinstance(obj, tuple):
        return [jsonable(x) for x in obj]
    if isinstance(obj, list):
        return [jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    return obj


def small_cut(snap, segments=6, entries=200):
    return {
        "segments": snap["segments"][:segments],
        "device_traces": [t[:entries] for t in snap["device_traces"]],
        "allocator_settings": snap["allocator_settings"],
        "external_annotations": snap.get("external_annotations", [])[:4],
    }


def write_stats(name, snap):
    with open(os.path.join(DATA, name), "w") as f:
        json.dump(figures(snap), f, indent=1, sort_keys=True)
        f.write("\n")


def op_position(raw, name, after=0, arg=None):
    for op, a, pos in pickletools.genops(raw):
        if pos >= after and op.name == name and (arg is None or a == arg):
            return pos
    raise ValueError(name)


def appends_enclosing(raw, at):
    """Position of the APPENDS that appends the dict holding the op at `at` to its list."""
    depth = 0
    target = None
    for op, _, pos in pickletools.genops(raw):
        if pos == at:
            target = depth - 1  # the dict's own MARK is open here; its list's MARK is below it
        if op.name == "MARK":
            depth += 1
        elif op.name in ("APPENDS", "SETITEMS", "TUPLE", "DICT", "LIST", "POP_MARK"):
            if op.name == "APPENDS" and target is not None and depth == target:
                return pos
            depth -= 1
    raise ValueError("no enclosing APPENDS")


def bad_inputs(small):
    """Malformed snapshots, each with where the reader must stop and what it must say."""
    expect = []

    def add(name, data, offset_min, offset_max, contains):
        with open(os.path.join(DATA, name), "wb") as f:
            f.write(data)
        expect.append({"file": name, "offset_min": offset_min, "offset_max": offset_max, "contains": contains})

    # A pickle that would import and call: GLOBAL + REDUCE (protocol 2), STACK_GLOBAL (4).
    hostile = {"segments": [], "device_traces": [], "x": collections.OrderedDict(a=1)}
    raw = pickle.dumps(hostile, protocol=2)
    pos = op_position(raw, "GLOBAL")
    add("snap_bad_global.pickle", raw, pos, pos, "GLOBAL")
    raw = pickle.dumps(hostile, protocol=4)
    pos = op_position(raw, "STACK_GLOBAL")
    add("snap_bad_stack_global.pickle", raw, pos, pos, "STACK_GLOBAL")

    # A trace entry whose size is a string: reported where the entry is appended.
    bad = json.loads(json.dumps(small))
    entry = {"action": "alloc", "addr": 1 << 40, "size": "big", "stream": 0, "time_us": 1, "frames": []}
    bad["device_traces"][0].insert(3, entry)
    raw = pickle.dumps(bad, protocol=4)
    pos = appends_enclosing(raw, op_position(raw, "SHORT_BINUNICODE", arg="big"))
    add("snap_bad_size_type.pickle", raw, pos, pos, "expected an integer for trace entry field 'size', found a string")

    # An unknown action, in JSON: the offset falls inside that entry's object.
    bad = json.loads(json.dumps(small))
    bad["device_traces"][0][5]["action"] = "explode"
    text = json.dumps(bad)
    start = text.index('"explode"')
    add("snap_bad_action.json", text.encode(), text.rindex("{", 0, start), text.index("}", start) + 1, "'explode'")

    # Truncations: the reader must stop at or before the cut and say the data ended.
    raw = pickle.dumps(small, protocol=4)
    cut = len(raw) // 2
    add("snap_bad_truncated.pickle", raw[:cut], 0, cut, "end of the data")
    text = json.dumps(small)[:5000]
    add("snap_bad_truncated.json", text.encode(), 0, len(text), "expected")
    # Not a snapshot at all.
    add("snap_bad_not_snapshot.txt", b"hello, world\n", 0, 0, "expected a pickle")
    raw = pickle.dumps([1, 2, 3], protocol=3)
    add("snap_bad_list_of_ints.pickle", raw, 0, len(raw), "expected each segment to be a dict")

    with open(os.path.join(DATA, "snap_bad.expect.json"), "w") as f:
        json.dump(expect, f, indent=1)
        f.write("\n")


def main():
    with gzip.open(os.path.join(DATA, "snap_transformer_p4.pickle.gz"), "rb") as f:
        snap = pickle.load(f)
    for proto in (2, 5):
        with gzip.GzipFile(os.path.join(DATA, f"snap_transformer_p{proto}.pickle.gz"), "wb", mtime=0) as f:
            pickle.dump(snap, f, protocol=proto)
    with gzip.GzipFile(os.path.join(DATA, "snap_transformer.json.gz"), "wb", mtime=0) as f:
        f.write(json.dumps(jsonable(snap)).encode())
    write_stats("snap_transformer.stats.json", snap)

    small = small_cut(snap)
    with open(os.path.join(DATA, "snap_small_p5.pickle"), "wb") as f:
        pickle.dump(small, f, protocol=5)
    with open(os.path.join(DATA, "snap_small.json"), "w") as f:
        json.dump(jsonable(small), f)
    write_stats("snap_small.stats.json", small)
    bad_inputs(jsonable(small_cut(snap, segments=2, entries=24)))


if __name__ == "__main__":
    main()
