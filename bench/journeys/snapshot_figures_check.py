#!/usr/bin/env python3
"""Journey 1 on a GPU: PyTorch records its allocator history over a few training steps and
writes the snapshot (torch.cuda.memory._dump_snapshot); `cudascope snapshot-stats --json`
must give the figures this script computes from the same pickle with plain Python: segments,
blocks, reserved, allocated, active, requested and inactive bytes, the largest free block,
trace entries and the count of each trace action.

  python3 snapshot_figures_check.py --cudascope BUILD/cli/cudascope --out DIR
Prints one line per figure that differs and a PASS/FAIL line; exit 1 on a difference."""
import argparse
import collections
import json
import os
import pickle
import subprocess
import sys


def train_and_dump(path):
    import torch
    import torch.nn as nn
    torch.cuda.memory._record_memory_history(max_entries=1_000_000)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                          nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(1024, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(8):
        # Batches of several sizes, as a real loader's last batch is: blocks of many sizes.
        x = torch.randn(16 + 8 * (step % 3), 3, 64, 64, device="cuda")
        y = torch.randint(0, 10, (x.shape[0],), device="cuda")
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(path)


def python_figures(path):
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    segments = snapshot["segments"]
    blocks = [b for s in segments for b in s["blocks"]]
    inactive = [b["size"] for b in blocks if b["state"] == "inactive"]
    traces = [e for device in snapshot["device_traces"] for e in device]
    return {
        "segments": len(segments),
        "blocks": len(blocks),
        "reserved_bytes": sum(s["total_size"] for s in segments),
        "allocated_bytes": sum(s["allocated_size"] for s in segments),
        "active_bytes": sum(s["active_size"] for s in segments),
        "requested_bytes": sum(s["requested_size"] for s in segments),
        "inactive_bytes": sum(inactive),
        "largest_free_block": max(inactive, default=0),
        "trace_entries": len(traces),
        "actions": dict(collections.Counter(e["action"] for e in traces)),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cudascope", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "torch_train_snapshot.pickle")
    train_and_dump(path)
    expected = python_figures(path)
    run = subprocess.run([args.cudascope, "snapshot-stats", path, "--json"], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL: snapshot-stats exited {run.returncode}: {run.stderr.strip()[:300]}")
        return 1
    got = json.loads(run.stdout)
    bad = [k for k in expected if got.get(k) != expected[k]]
    for k in bad:
        print(f"  {k}: python {expected[k]} cudascope {got.get(k)}")
    summary = (f"{expected['segments']} segments, {expected['blocks']} blocks, {expected['trace_entries']} trace entries, "
               f"reserved {expected['reserved_bytes']} B")
    print(("PASS" if not bad else "FAIL") + f": {len(expected) - len(bad)}/{len(expected)} figures equal ({summary})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
