#!/usr/bin/env python3
"""Replays recorded PyTorch allocation sequences with `cudascope replay` and compares the
memory_stats() it prints with PyTorch's (SEQ.stats.json.gz beside each SEQ.jsonl.gz), key by
key. The backend is the environment's (CUDASCOPE_BACKEND=sim: the sim's own addresses, no
recorded ones; cuda: the real driver). Exit status 1 when any key differs.

  python3 replay_stats_check.py BUILD/cli/cudascope SEQ.jsonl.gz...
"""
import gzip
import json
import subprocess
import sys


def main():
    cli, sequences = sys.argv[1], sys.argv[2:]
    failed = 0
    for seq in sequences:
        with gzip.open(seq.replace(".jsonl.gz", ".stats.json.gz")) as f:
            expected = json.load(f)
        run = subprocess.run([cli, "replay", seq], capture_output=True, text=True)
        if run.returncode != 0:
            print(f"{seq}: replay failed: {run.stderr.strip()[:300]}")
            failed += 1
            continue
        got = json.loads(run.stdout)
        bad = [k for k in sorted(expected) if got.get(k) != expected[k]]
        failed += bool(bad)
        detail = ", ".join(f"{k} torch={expected[k]} ours={got.get(k)}" for k in bad[:6])
        print(f"{seq.split('/')[-1]}: {len(expected) - len(bad)}/{len(expected)} keys equal" + (f": {detail}" if bad else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
