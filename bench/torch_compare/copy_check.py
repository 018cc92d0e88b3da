#!/usr/bin/env python3
"""Host<->device copy bandwidth: cudascope's Tensor copies against torch's, in the same run.

    python3 copy_check.py --copy-bandwidth BUILD/copy_bandwidth [--rounds 3]

Both sides do the same thing per case (size, direction, pinned or pageable host memory):
a warm-up copy, then K copies (non_blocking for pinned memory, blocking for pageable) and
one synchronize, timed on the host. The two libraries alternate for --rounds rounds and
the best of each is kept. Prints a table with the ratio cudascope / torch.
"""
import argparse
import json
import os
import subprocess
import sys
import time

import torch

SIZES = [1 << 20, 64 << 20, 256 << 20]
ITERS = 20


def torch_case(nbytes, pinned, h2d):
    n = nbytes // 4
    device = torch.zeros(n, device="cuda")
    host = torch.ones(n, pin_memory=pinned)
    dst, src = (device, host) if h2d else (host, device)
    dst.copy_(src, non_blocking=pinned)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(ITERS):
        dst.copy_(src, non_blocking=pinned)
    torch.cuda.synchronize()
    return nbytes * ITERS / (time.perf_counter() - start) / 1e9


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copy-bandwidth", required=True, help="path of the copy_bandwidth program")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    best = {}
    for _ in range(args.rounds):
        cmd = [args.copy_bandwidth, "--iters", str(ITERS)] + sum((["--bytes", str(s)] for s in SIZES), [])
        out = subprocess.run(cmd, check=True, capture_output=True, text=True,
                             env=dict(os.environ, CUDASCOPE_BACKEND="cuda")).stdout
        for line in out.splitlines():
            r = json.loads(line)
            key = ("cudascope", r["bytes"], r["mem"], r["dir"])
            best[key] = max(best.get(key, 0), r["gbps"])
        for nbytes in SIZES:
            for pinned in (True, False):
                for h2d in (True, False):
                    key = ("torch", nbytes, "pinned" if pinned else "pageable", "h2d" if h2d else "d2h")
                    best[key] = max(best.get(key, 0), torch_case(nbytes, pinned, h2d))
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}; best of {args.rounds} rounds, {ITERS} copies each")
    print(f"{'bytes':>10} {'memory':>9} {'dir':>4} {'cudascope GB/s':>15} {'torch GB/s':>11} {'ratio':>6}")
    for nbytes in SIZES:
        for mem in ("pinned", "pageable"):
            for d in ("h2d", "d2h"):
                ours = best[("cudascope", nbytes, mem, d)]
                theirs = best[("torch", nbytes, mem, d)]
                print(f"{nbytes:>10} {mem:>9} {d:>4} {ours:>15.2f} {theirs:>11.2f} {ours / theirs:>6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
