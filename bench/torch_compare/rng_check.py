#!/usr/bin/env python3
"""Compares cudascope's rand/randn with torch's on the same GPU after the same manual_seed.

    python3 rng_check.py --rng-dump BUILD/rng_dump [--out DIR]

For each case (seed, size, distribution, dtype) both libraries draw twice (the second draw
checks the Philox offset advance) and the RNG states after the draws are compared byte for
byte. Prints one line per case: identical elements, the first differing index, the largest
absolute difference and the largest difference in float32 ulps; exits 1 if any uniform
case or any state differs (normals are reported, not required to be identical).
Build rng_dump beside the runtime (see bench/results/tensor.md for the command).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

CASES = [
    (s, n, dist, dtype)
    for s in (0, 42, 2**40 + 7)
    for n in (1, 7, 1000, 4096 * 257, 3_000_001)
    for dist in ("rand", "randn")
    for dtype in ("float32",)
] + [(123, 100_000, "rand", "float16"), (123, 100_000, "rand", "bfloat16"), (5, 100_000, "randn", "float16")]

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def ulps(a, b):
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return np.abs(ia - ib)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rng-dump", required=True, help="path of the rng_dump program")
    parser.add_argument("--out", help="directory for the number files (default: a temporary one)")
    args = parser.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="rng_check_")
    os.makedirs(out, exist_ok=True)
    specs = [f"{s}:{n}:{d}:{t}" for s, n, d, t in CASES]
    subprocess.run([args.rng_dump, out] + specs, check=True, env=dict(os.environ, CUDASCOPE_BACKEND="cuda"))
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}")
    print(f"{'seed':>14} {'n':>9} {'dist':>5} {'dtype':>8} draw {'identical':>10} {'first_diff':>10} {'max_abs':>10} {'max_ulp':>8}")
    failed = False
    for seed, n, dist, dtype in CASES:
        torch.cuda.manual_seed(seed)
        draw = torch.rand if dist == "rand" else torch.randn
        theirs = [draw(n, device="cuda", dtype=DTYPES[dtype]).float().cpu().numpy() for _ in range(2)]
        state = torch.cuda.get_rng_state().numpy().tobytes()
        stem = os.path.join(out, f"ours_{seed}_{n}_{dist}_{dtype}")
        for i in range(2):
            ours = np.fromfile(f"{stem}_{i}.bin", dtype=np.float32)
            same = ours == theirs[i]
            diff = np.abs(ours.astype(np.float64) - theirs[i].astype(np.float64))
            first = int(np.argmin(same)) if not same.all() else -1
            print(f"{seed:>14} {n:>9} {dist:>5} {dtype:>8} {i:>4} {int(same.sum()):>10} {first:>10} "
                  f"{diff.max():>10.3g} {int(ulps(ours, theirs[i]).max()):>8}")
            if dist == "rand" and not same.all():
                failed = True
        with open(f"{stem}_state.bin", "rb") as f:
            ours_state = f.read()
        if ours_state != state:
            print(f"  state differs: ours {ours_state.hex()} torch {state.hex()}")
            failed = True
    print("rng_check:", "DIFFERENCES (see above)" if failed else "uniform numbers and states identical")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
