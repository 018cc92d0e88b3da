#!/usr/bin/env python3
"""Compares cudascope's comm collectives with torch.cuda.comm on two GPUs, value for value,
and their broadcast / reduce_add times on a 256 MB tensor in the same run.

Usage: comm_check.py --comm-dump BUILD/comm_dump   (needs torch and two GPUs)
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.cuda.comm as comm


def randn_on(sizes, device):
    return torch.randn(*sizes, device=f"cuda:{device}")


def median_seconds(fn, repeats=10):
    times = []
    for r in range(repeats + 2):
        torch.cuda.synchronize(0); torch.cuda.synchronize(1)
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize(0); torch.cuda.synchronize(1)
        if r >= 2:
            times.append(time.perf_counter() - t0)
    return sorted(times)[len(times) // 2]


def torch_results():
    torch.cuda.manual_seed_all(1234)
    a = randn_on((1024, 513), 0)
    results = {"broadcast": comm.broadcast(a, devices=[0, 1])}
    small = [randn_on((n, 3), 0) for n in (7, 1000, 33, 4096, 5)]
    results["broadcast_coalesced"] = comm.broadcast_coalesced(small, [0, 1], buffer_size=64 * 1024)[1]
    b0, b1 = randn_on((300, 301), 0), randn_on((300, 301), 1)
    results["reduce_add"] = [comm.reduce_add([b0, b1], destination=0)]
    s = randn_on((1000, 37), 0)
    results["scatter"] = comm.scatter(s, devices=[0, 1], chunk_sizes=[300, 700], dim=0)
    g0, g1 = randn_on((64, 10), 0), randn_on((64, 22), 1)
    results["gather"] = [comm.gather([g0, g1], dim=1, destination=0)]
    big = 64 << 20
    x0, x1 = randn_on((big,), 0), randn_on((big,), 1)
    timings = {"broadcast_256MB_s": median_seconds(lambda: comm.broadcast(x0, devices=[0, 1])),
               "reduce_add_256MB_s": median_seconds(lambda: comm.reduce_add([x0, x1], destination=0))}
    return results, timings


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--comm-dump", required=True)
    args = ap.parse_args()
    if torch.cuda.device_count() < 2:
        print("comm_check: needs two GPUs")
        return 1
    print("GPUs:", [torch.cuda.get_device_name(i) for i in range(2)], "torch", torch.__version__)
    with tempfile.TemporaryDirectory() as out:
        ours_run = subprocess.run([args.comm_dump, out], capture_output=True, text=True)
        if ours_run.returncode != 0:
            print(ours_run.stdout, ours_run.stderr)
            return 1
        ours_timings = json.loads(ours_run.stdout.strip().splitlines()[-1])
        theirs, torch_timings = torch_results()
        failures = 0
        for case, tensors in theirs.items():
            for i, t in enumerate(tensors):
                path = os.path.join(out, f"ours_{case}_{i}.bin")
                ours = np.fromfile(path, dtype=np.float32) if os.path.exists(path) else None
                want = t.float().cpu().numpy().ravel()
                same = ours is not None and ours.shape == want.shape and np.array_equal(ours, want)
                failures += not same
                diff = "missing" if ours is None else (
                    "equal" if same else f"differs (max |d| {np.max(np.abs(ours - want)) if ours.shape == want.shape else 'shape'})")
                print(f"{case}[{i}] on {t.device}: {tuple(t.shape)} {diff}")
    for key in ours_timings:
        print(f"{key}: cudascope {ours_timings[key] * 1e3:.3f} ms, torch {torch_timings[key] * 1e3:.3f} ms, "
              f"ratio {ours_timings[key] / torch_timings[key]:.3f}")
    print("comm_check:", "all equal" if failures == 0 else f"{failures} results differ")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
