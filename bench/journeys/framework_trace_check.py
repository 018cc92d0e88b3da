#!/usr/bin/env python3
"""Wrapping a program not written with PyTorch (JAX, CuPy: jax_train.py, cupy_steps.py) on a
GPU: the program run plain, then under `cudascope run -o` for STEPS steps and for twice as
many. Each must end normally; the traced run must print the same result as the plain one, to
the bit (recording must not change what a program computes); each trace must be whole
(`cudascope stats --check`) and hold kernels, each named; and the second must hold the first's
kernels and the same number again for each further step (every step of these programs
launches the same kernels, so a lost or doubled record shows as a remainder).

The program takes --steps N and prints its result as its last JSON line on stdout.

  framework_trace_check.py --cli CLI --out DIR [--steps 10] -- COMMAND...
Prints the figures and a PASS/FAIL line; exit 1 on failure."""
import argparse
import json
import os
import subprocess
import sys


def result_of(run):
    """The last JSON object the run printed on stdout, or None."""
    for line in reversed(run.stdout.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def run_program(command, log_path):
    """Runs COMMAND, its output kept in LOG_PATH: (exit status, its result or None)."""
    run = subprocess.run(command, capture_output=True, text=True)
    with open(log_path, "w") as log:
        log.write(" ".join(command) + "\n" + run.stdout + run.stderr)
    return run.returncode, result_of(run)


def kernels_of(cli, trace):
    """(kernel count, distinct names, unnamed count) that `cudascope stats` reads from TRACE, or
    a problem in words."""
    check = subprocess.run([cli, "stats", "--check", trace], capture_output=True, text=True)
    if check.returncode != 0:
        return f"stats --check {os.path.basename(trace)}: {(check.stderr or check.stdout).strip()[:300]}"
    stats = subprocess.run([cli, "stats", "--json", trace], capture_output=True, text=True)
    if stats.returncode != 0:
        return f"stats --json {os.path.basename(trace)}: {stats.stderr.strip()[:300]}"
    rows = json.loads(stats.stdout)["kernels"]
    unnamed = sum(r["count"] for r in rows if not r.get("name", "").strip())
    return sum(r["count"] for r in rows), len(rows), unnamed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--out", required=True, help="directory for the traces and each run's output")
    parser.add_argument("--steps", type=int, default=10)
    args, command = parser.parse_known_args()
    command = command[1:] if command[:1] == ["--"] else command
    if not command:
        parser.error("no program given after --")
    if args.steps < 1:
        parser.error(f"--steps {args.steps}: at least 1")
    os.makedirs(args.out, exist_ok=True)
    # The files are named after the program's script (the first .py given), else its command.
    script = next((part for part in command if part.endswith(".py")), command[0])
    name = os.path.splitext(os.path.basename(script))[0]
    steps = {"once": args.steps, "twice": 2 * args.steps}
    plain_status, plain = run_program(command + ["--steps", str(args.steps)], os.path.join(args.out, f"{name}_plain.log"))
    if plain_status != 0 or plain is None:
        print(f"FAIL: the plain run ended with {plain_status}" + ("" if plain else ", printing no result"))
        return 1
    problems, kernels = [], {}
    for label, n in steps.items():
        trace = os.path.join(args.out, f"{name}_{n}_steps.json.gz")
        status, result = run_program([args.cli, "run", "-o", trace, "--"] + command + ["--steps", str(n)],
                                     os.path.join(args.out, f"{name}_{n}_steps.log"))
        if status != 0:
            problems.append(f"the traced run of {n} steps ended with {status}")
            continue
        if label == "once" and (result or {}).get("loss") != plain.get("loss"):
            problems.append(f"the traced run computed {(result or {}).get('loss')}, the plain run {plain.get('loss')}")
        found = kernels_of(args.cli, trace)
        if isinstance(found, str):
            problems.append(found)
            continue
        kernels[label] = found
        if found[0] == 0:
            problems.append(f"no kernel in the trace of {n} steps")
        if found[2]:
            problems.append(f"{found[2]} kernels without a name in the trace of {n} steps")
    detail = f"{plain.get('framework')} {plain.get('version')} on {plain.get('device')}: result {plain.get('loss')}"
    if len(kernels) == 2:
        (once, names, _), (twice, _, _) = kernels["once"], kernels["twice"]
        added, remainder = divmod(twice - once, args.steps)
        detail += f"; {once} kernels ({names} names) in {args.steps} steps, {twice} in {2 * args.steps}"
        if twice <= once or remainder:
            problems.append(f"{twice - once} more kernels for {args.steps} more steps: not the same number each step")
        else:
            detail += f": {added} a step"
    print(detail)
    print(("FAIL: " + "; ".join(problems)) if problems else f"PASS: {detail}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
