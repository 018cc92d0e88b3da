#!/usr/bin/env python3
"""bench/journeys/framework_trace_check.py without a GPU: on the sim backend a program that
runs `cudascope demo` (one kernel a step once started) passes, with the traces named after
its script; a program whose result changes under `cudascope run` fails, the two results
named, as does one whose runs leave no trace.

  framework_trace_check_test.py CLI"""
import os
import subprocess
import sys
import tempfile

from check_support import expect

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "..", "bench", "journeys", "framework_trace_check.py")

# A program of the check's shape: --steps N, its result as its last JSON line. With CLI it
# runs the demo for its steps; without, it runs nothing on a device, and its result tells
# whether it ran under `cudascope run` (which sets CUDASCOPE_ variables for the program).
PROGRAM = r"""
import argparse, json, os, subprocess
parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int)
parser.add_argument("--cli")
args = parser.parse_args()
if args.cli:
    subprocess.run([args.cli, "demo", "--iterations", str(args.steps)], check=True, capture_output=True)
wrapped = any(name.startswith("CUDASCOPE_") and name != "CUDASCOPE_BACKEND" for name in os.environ)
result = f"{args.steps} steps" + (" wrapped" if wrapped and not args.cli else "")
print(json.dumps({"framework": "test", "version": "1", "device": "sim", "loss": result}))
"""


def check(cli, out, *program_args):
    env = dict(os.environ, CUDASCOPE_BACKEND="sim")
    program = os.path.join(out, "steps_program.py")
    with open(program, "w") as f:
        f.write(PROGRAM)
    return subprocess.run([sys.executable, CHECK, "--cli", cli, "--out", out, "--steps", "1", "--",
                           sys.executable, program, *program_args], env=env, capture_output=True, text=True, timeout=120)


def main():
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as out:
        passing = check(cli, out, "--cli", cli)
        expect(passing.returncode == 0, "the demo's steps pass", passing)
        expect("PASS: test 1 on sim: result 1 steps" in passing.stdout, "the result is named", passing)
        expect("1 a step" in passing.stdout, "the kernels a step are counted", passing)
        for steps in (1, 2):
            expect(os.path.exists(os.path.join(out, f"steps_program_{steps}_steps.json.gz")),
                   f"the trace of {steps} steps is named after the script", passing)
    with tempfile.TemporaryDirectory() as out:
        changed = check(cli, out)
        expect(changed.returncode == 1, "a result changed under cudascope run fails", changed)
        expect("the traced run computed 1 steps wrapped, the plain run 1 steps" in changed.stdout,
               "both results are named", changed)
        expect("stats --check steps_program_1_steps.json.gz" in changed.stdout, "the missing trace is named", changed)
    print("ok")


if __name__ == "__main__":
    main()
