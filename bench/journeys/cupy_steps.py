#!/usr/bin/env python3
"""A CuPy program for the GPU checks of programs not written with PyTorch: each step runs an
elementwise kernel of its own (compiled at run time), a matrix product (cuBLAS), a reduction
and a copy to the host, so that every step launches the same kernels. Prints one JSON line:
the framework, its version, the device and the final value written exactly (float.hex), so
that a run under cudascope can be told to compute the same as a plain one.

  cupy_steps.py [--steps 20] [--linger 0]"""
import argparse
import json
import time

import cupy as cp

SIZE = 1024
scaled_relu = cp.ElementwiseKernel("float32 x, float32 s", "float32 y", "y = x > 0 ? x * s : 0", "scaled_relu")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--linger", type=float, default=0, help="seconds to wait after the last step (for scrapers)")
    args = parser.parse_args()
    rng = cp.random.default_rng(0)
    a = rng.standard_normal((SIZE, SIZE), dtype=cp.float32) / SIZE ** 0.5
    x = rng.standard_normal((SIZE, SIZE), dtype=cp.float32)
    total = 0.0
    for _ in range(args.steps):
        x = scaled_relu(a @ x, cp.float32(1.5))
        x /= cp.linalg.norm(x) / SIZE
        total += float(x.sum())  # a copy to the host each step, as a training loop's loss
    print(json.dumps({"framework": "cupy", "version": cp.__version__,
                      "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                      "steps": args.steps, "loss": float(total).hex()}), flush=True)
    if args.linger:
        time.sleep(args.linger)


if __name__ == "__main__":
    main()
