#!/usr/bin/env python3
"""Replays recorded PyTorch allocation sequences on this GPU twice: with `cudascope replay` on
the cuda backend and with PyTorch itself (tests/data/make_replay.py's child, a fresh process
per sequence), and compares both with the memory_stats() recorded beside each sequence
(SEQ.stats.json.gz). A sequence whose PyTorch replay here differs from the recording has met
another driver (other addresses, so other best-fit choices): ours must then equal PyTorch's
replay on this GPU. So our drift is told from the driver's.

  python3 replay_vs_torch.py BUILD/cli/cudascope SEQ.jsonl.gz...
One line per sequence and a PASS/FAIL line; exit 1 when ours differs from both."""
import gzip
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "data"))
import make_replay  # noqa: E402


def differing(a, b):
    return [k for k in sorted(b) if a.get(k) != b[k]]


def main():
    cli, sequences = sys.argv[1], sys.argv[2:]
    env = dict(os.environ, CUDASCOPE_BACKEND="cuda")
    counts = {"equal": 0, "equal to PyTorch here": 0, "differs": 0}
    for seq in sequences:
        name = os.path.basename(seq)[: -len(".jsonl.gz")]
        with gzip.open(seq.replace(".jsonl.gz", ".stats.json.gz"), "rt") as f:
            recorded = json.load(f)
        with gzip.open(seq, "rt") as f:
            conf = json.loads(f.readline()).get("conf", "")
        torch_here = make_replay.child(seq, conf)["stats"]
        run = subprocess.run([cli, "replay", seq], capture_output=True, text=True, env=env)
        if run.returncode != 0:
            print(f"{name}: cudascope replay failed: {run.stderr.strip()[:300]}")
            counts["differs"] += 1
            continue
        ours = json.loads(run.stdout)
        vs_recorded, vs_torch = differing(ours, recorded), differing(ours, torch_here)
        torch_drift = differing(torch_here, recorded)
        verdict = "equal" if not vs_recorded else "equal to PyTorch here" if not vs_torch else "differs"
        counts[verdict] += 1
        line = (f"{name}: {verdict}; PyTorch here reproduces the recording: {not torch_drift}"
                + (f" ({len(torch_drift)} keys off)" if torch_drift else ""))
        if verdict == "differs":
            line += "; ours vs PyTorch here: " + ", ".join(
                f"{k} ours={ours.get(k)} torch={torch_here[k]}" for k in vs_torch[:5]) + f" ({len(vs_torch)} keys)"
        print(line, flush=True)
    ok = counts["differs"] == 0
    print(("PASS" if ok else "FAIL") + f": {len(sequences)} sequences: {counts['equal']} equal to the recording, "
          f"{counts['equal to PyTorch here']} equal to PyTorch's replay on this GPU (the driver placed segments "
          f"elsewhere), {counts['differs']} differ")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
