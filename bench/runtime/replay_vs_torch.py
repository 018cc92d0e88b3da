#!/usr/bin/env python3
"""Replays recorded PyTorch allocation sequences on this GPU twice: with `cudascope replay` on
the cuda backend and with PyTorch itself (tests/data/make_replay.py's child, a fresh process
per sequence), and compares both with the memory_stats() recorded beside each sequence
(SEQ.stats.json.gz). A sequence whose PyTorch replay here differs from the recording has met
another placement of segments by the driver (other addresses, so other best-fit choices). The
driver's placement differs between processes, at times even between two PyTorch processes
replaying one sequence on one machine (PyTorch is then run a second time to show it). Ours
must then equal PyTorch's replay here, with the driver's placement or, failing that, with
PyTorch's addresses here as the order of ties (`cudascope replay --recorded-addresses`): the
allocator's decisions told from the driver's.

Each sequence is replayed once more with the allocator's history on (`--snapshot`): its stats
must equal the replay without it, and the line says whether its segments' addresses (relative
to the first) follow PyTorch's here, whose replay records history too: what our process maps
beside the driver must not move where the driver places segments.

  python3 replay_vs_torch.py BUILD/cli/cudascope SEQ.jsonl.gz...
One line per sequence and a PASS/FAIL line; exit 1 when ours differs from both."""
import gzip
import json
import os
import pickle
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data"))
import make_replay  # noqa: E402


def differing(a, b):
    return [k for k in sorted(b) if a.get(k) != b[k]]


def replay(cli, seq, env, addresses=None, segments=None):
    """Our memory_stats() for SEQ, or None with the error printed. With SEGMENTS (a list) the
    replay records history and SEGMENTS gets the addresses of its cudaMallocs, in order."""
    with tempfile.TemporaryDirectory() as tmp:
        args = [cli, "replay", seq]
        if addresses is not None:
            path = os.path.join(tmp, "segments.json")
            with open(path, "w") as f:
                json.dump(addresses, f)
            args += ["--recorded-addresses", path]
        snapshot = os.path.join(tmp, "snapshot.pickle")
        if segments is not None:
            args += ["--snapshot", snapshot]
        run = subprocess.run(args, capture_output=True, text=True, env=env)
        if run.returncode == 0 and segments is not None:
            with open(snapshot, "rb") as f:
                trace = pickle.load(f)["device_traces"][0]
            segments.extend(e["addr"] for e in trace if e["action"] == "segment_alloc")
    if run.returncode != 0:
        print(f"{os.path.basename(seq)}: cudascope replay failed: {run.stderr.strip()[:300]}")
        return None
    return json.loads(run.stdout)


def first_placement_difference(ours, theirs):
    """The index of the first segment placed elsewhere (relative to the first), or None."""
    relative = lambda addresses: [a - addresses[0] for a in addresses] if addresses else []
    a, b = relative(ours), relative(theirs)
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), None if len(a) == len(b) else min(len(a), len(b)))


def with_history(cli, seq, env, ours, torch_here):
    """(stats unchanged by history, this replay's segments placed as PyTorch's here) and a note."""
    segments = []
    stats = replay(cli, seq, env, segments=segments)
    unchanged = stats is not None and ours is not None and not differing(stats, ours)
    part = first_placement_difference(segments, torch_here["segments"])
    note = (f"with history: stats {'unchanged' if unchanged else 'CHANGED'}, segments "
            + ("placed as PyTorch's here" if part is None else f"part from PyTorch's at cudaMalloc {part}"))
    return unchanged, part is None, note


def verdict(cli, seq, env, recorded, torch_here):
    """(verdict, the stats it rests on, our stats without PyTorch's addresses) for one sequence."""
    ours = replay(cli, seq, env)
    if ours is None:
        return "differs", {}, None
    if not differing(ours, recorded):
        return "equal", ours, ours
    if not differing(ours, torch_here["stats"]):
        return "equal to PyTorch here", ours, ours
    ordered = replay(cli, seq, env, torch_here["segments"])
    if ordered is not None and not differing(ordered, torch_here["stats"]):
        return "equal to PyTorch here given its addresses", ordered, ours
    return "differs", ours, ours


def main():
    cli, sequences = sys.argv[1], sys.argv[2:]
    env = dict(os.environ, CUDASCOPE_BACKEND="cuda")
    counts = {"equal": 0, "equal to PyTorch here": 0, "equal to PyTorch here given its addresses": 0, "differs": 0}
    history_changed, placed_as_torch = 0, 0
    for seq in sequences:
        name = os.path.basename(seq)[: -len(".jsonl.gz")]
        with gzip.open(seq.replace(".jsonl.gz", ".stats.json.gz"), "rt") as f:
            recorded = json.load(f)
        with gzip.open(seq, "rt") as f:
            conf = json.loads(f.readline()).get("conf", "")
        torch_here = make_replay.child(seq, conf)
        found, ours, plain = verdict(cli, seq, env, recorded, torch_here)
        counts[found] += 1
        torch_drift = differing(torch_here["stats"], recorded)
        line = (f"{name}: {found}; PyTorch here reproduces the recording: {not torch_drift}"
                + (f" ({len(torch_drift)} keys off)" if torch_drift else ""))
        if torch_drift:
            again = differing(make_replay.child(seq, conf)["stats"], torch_here["stats"])
            line += f"; a second PyTorch replay here {'differs from the first in ' + str(len(again)) + ' keys' if again else 'equals the first'}"
        unchanged, placed, note = with_history(cli, seq, env, plain, torch_here)
        history_changed += not unchanged
        placed_as_torch += placed
        line += "; " + note
        if found == "differs":
            vs_torch = differing(ours, torch_here["stats"])
            line += "; ours vs PyTorch here: " + ", ".join(
                f"{k} ours={ours.get(k)} torch={torch_here['stats'][k]}" for k in vs_torch[:5]) + f" ({len(vs_torch)} keys)"
        print(line, flush=True)
    ok = counts["differs"] == 0 and history_changed == 0
    print(("PASS" if ok else "FAIL") + f": {len(sequences)} sequences: {counts['equal']} equal to the recording, "
          f"{counts['equal to PyTorch here']} equal to PyTorch's replay on this GPU (the driver placed segments "
          f"elsewhere), {counts['equal to PyTorch here given its addresses']} equal to it given its addresses "
          f"(the driver's placement differs between processes), {counts['differs']} differ; with history on "
          f"{history_changed} change their stats, {placed_as_torch} place every segment as PyTorch's here")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
