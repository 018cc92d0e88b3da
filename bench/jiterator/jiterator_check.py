#!/usr/bin/env python3
"""Compares cudascope's jiterator with torch.cuda.jiterator on the same GPU.

    python3 jiterator_check.py --jiterator-dump BUILD/jiterator_dump [--time] [--json FILE]

jiterator_dump (bench/jiterator/jiterator_dump.cpp) runs each case on cudascope's cuda
backend and prints its code string, scalars (creation defaults, call overrides), inputs
(dtype, base sizes, base values, an optional narrow) and outputs. This script builds the same
inputs in torch, calls torch.cuda.jiterator._create_jit_fn / _create_multi_output_jit_fn with
the same code string and keyword arguments (as floats: cudascope's scalars are doubles) and
compares dtype, sizes and values: integers and bool exactly, float32 within 1e-5 relative,
float16/bfloat16 within 1e-2 relative (both compute in float and round once, so they are
expected identical; the identical count says whether they are). With --time, both sides time
a few 16M-element calls with CUDA events (outputs allocated per call on both). Exits 1 when
any case differs. --json FILE reads a dump made earlier instead of running the program.
"""
import argparse
import json
import os
import subprocess
import sys

import torch
from torch.cuda.jiterator import _create_jit_fn, _create_multi_output_jit_fn

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int64": torch.int64,
    "int32": torch.int32,
    "uint8": torch.uint8,
    "bool": torch.bool,
}
TOLERANCE = {"float32": (1e-5, 1e-6), "float16": (1e-2, 1e-3), "bfloat16": (1e-2, 1e-3)}


def narrowed(tensor, narrow):
    if narrow is None:
        return tensor
    dim, start, length = (int(v) for v in narrow)
    return tensor.narrow(dim, start, length)


def make_input(spec):
    values = torch.tensor(spec["values"], dtype=torch.float64)
    tensor = values.to(DTYPES[spec["dtype"]]).reshape([int(s) for s in spec["sizes"]]).cuda()
    return narrowed(tensor, spec["narrow"])


def random_input(spec):
    sizes = [int(s) for s in spec["sizes"]]
    dtype = DTYPES[spec["dtype"]]
    tensor = torch.rand(sizes, device="cuda").to(dtype) if dtype.is_floating_point else torch.randint(0, 9, sizes, device="cuda").to(dtype)
    return narrowed(tensor, spec["narrow"])


def make_fn(case):
    defaults = {name: float(value) for name, value in case["defaults"]}
    if case["num_outputs"] == 0:
        return _create_jit_fn(case["code"], **defaults)
    return _create_multi_output_jit_fn(case["code"], case["num_outputs"], **defaults)


def call(case, fn, inputs):
    overrides = {name: float(value) for name, value in case["overrides"]}
    out = fn(*inputs, **overrides)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def compare(ours, theirs):
    """(ok, identical, n, max_abs, why) for one output."""
    dtype = str(theirs.dtype).replace("torch.", "")
    if dtype != ours["dtype"] or list(theirs.shape) != [int(s) for s in ours["sizes"]]:
        return False, 0, 0, float("nan"), f"torch gives {dtype}{list(theirs.shape)}, cudascope {ours['dtype']}{ours['sizes']}"
    a = torch.tensor(ours["values"], dtype=torch.float64)
    b = theirs.double().cpu().flatten()
    identical = int((a == b).sum())
    max_abs = float((a - b).abs().max()) if a.numel() else 0.0
    if dtype in TOLERANCE:
        rtol, atol = TOLERANCE[dtype]
        ok = bool(torch.allclose(a, b, rtol=rtol, atol=atol))
    else:
        ok = identical == a.numel()
    return ok, identical, a.numel(), max_abs, ""


def time_torch(spec, calls=50):
    case = dict(spec, overrides=[])
    fn = make_fn(case)
    inputs = [random_input(s) for s in spec["inputs"]]
    for _ in range(3):
        call(case, fn, inputs)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        call(case, fn, inputs)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / calls


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jiterator-dump", help="path of the jiterator_dump program")
    parser.add_argument("--json", help="a dump written earlier (instead of running the program)")
    parser.add_argument("--time", action="store_true", help="also time both sides")
    args = parser.parse_args()
    if args.json:
        with open(args.json) as f:
            dump = json.load(f)
    elif args.jiterator_dump:
        command = [args.jiterator_dump] + (["--time"] if args.time else [])
        env = dict(os.environ, CUDASCOPE_BACKEND=os.environ.get("CUDASCOPE_BACKEND", "cuda"))
        dump = json.loads(subprocess.run(command, check=True, env=env, stdout=subprocess.PIPE, text=True).stdout)
    else:
        parser.error("give --jiterator-dump or --json")
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {torch.cuda.get_device_name(0)}; "
          f"cudascope backend {dump['backend']}")
    print(f"{'case':<22} {'out':>3} {'dtype':>8} {'identical':>16} {'max_abs':>10}  result")
    failed = False
    for case in dump["cases"]:
        try:
            theirs = call(case, make_fn(case), [make_input(s) for s in case["inputs"]])
        except Exception as e:  # a case torch refuses is a difference worth seeing
            print(f"{case['name']:<22} torch raised {type(e).__name__}: {e}")
            failed = True
            continue
        if len(theirs) != len(case["outputs"]):
            print(f"{case['name']:<22} torch gives {len(theirs)} outputs, cudascope {len(case['outputs'])}")
            failed = True
            continue
        for i, (ours, t) in enumerate(zip(case["outputs"], theirs)):
            ok, identical, n, max_abs, why = compare(ours, t)
            failed |= not ok
            print(f"{case['name']:<22} {i:>3} {ours['dtype']:>8} {identical:>7}/{n:<8} {max_abs:>10.3g}  "
                  f"{'ok' if ok else 'DIFFERS'} {why}")
    if dump.get("timings"):
        print(f"\n{'timing':<22} {'cudascope us':>13} {'torch us':>10} {'ratio':>7}")
        for spec in dump["timings"]:
            theirs = time_torch(spec)
            print(f"{spec['name']:<22} {spec['us_per_call']:>13.1f} {theirs:>10.1f} {spec['us_per_call'] / theirs:>7.2f}")
    print("all cases agree" if not failed else "SOME CASES DIFFER")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
