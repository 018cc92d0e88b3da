#!/usr/bin/env python3
"""Wrapping a program not written with PyTorch (JAX, CuPy: jax_train.py, cupy_steps.py) on a
GPU: the program run plain, then under `cudascope run -o` for STEPS steps and for twice as
many. Each must end normally; the traced run must print the same result as the plain one, to
the bit (recording must not change what a program computes); each trace must be whole
(`cudascope stats --check`) and hold kernels, each named; and the second must hold the first's
kernels, by name, and the same number again for each further step (every step of these programs
launches the same kernels, so a lost or doubled record shows as a remainder).

The program takes --steps N and prints its result as its last JSON line on stdout. A run that
dies leaves its native stack, named, in the output; one still going after --run-timeout
seconds leaves every thread's, then is killed (crash_stacks.run_job).

  framework_trace_check.py --cli CLI --out DIR [--steps 10] [--run-timeout 600] -- COMMAND...
Prints the figures and a PASS/FAIL line; exit 1 on failure."""
import argparse
import json
import os
import signal
import subprocess
import sys

from crash_stacks import no_core_files, run_job, symbolize


def result_of(output):
    """The last JSON object a run printed, or None."""
    for line in reversed(output.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def run_program(command, log_path, timeout):
    """Runs COMMAND, its output kept in LOG_PATH: (exit status, None if it hung; its result or
    None). A run that dies or hangs leaves its native stacks, named, on stdout."""
    with open(log_path, "w") as log:
        log.write(" ".join(command) + "\n")
        log.flush()
        status = run_job(command, log, timeout)
    with open(log_path, errors="replace") as f:
        text = f.read()
    if status != 0:
        print(symbolize(text) or f"  no native stack in {log_path}")
    return status, result_of(text)


def kernels_of(cli, trace):
    """(kernel count, the set of kernel names, unnamed count) that `cudascope stats` reads from
    TRACE, or a problem in words."""
    check = subprocess.run([cli, "stats", "--check", trace], capture_output=True, text=True)
    if check.returncode != 0:
        return f"stats --check {os.path.basename(trace)}: {(check.stderr or check.stdout).strip()[:300]}"
    stats = subprocess.run([cli, "stats", "--json", trace], capture_output=True, text=True)
    if stats.returncode != 0:
        return f"stats --json {os.path.basename(trace)}: {stats.stderr.strip()[:300]}"
    rows = json.loads(stats.stdout)["kernels"]
    unnamed = sum(r["count"] for r in rows if not r.get("name", "").strip())
    return sum(r["count"] for r in rows), {r.get("name", "") for r in rows}, unnamed


def traced_runs(args, command, name, plain):
    """Runs COMMAND under `cudascope run -o` for --steps steps and twice as many: (problems,
    {steps: (kernels, names, unnamed)} of the traces that could be read)."""
    problems, kernels = [], {}
    for n in (args.steps, 2 * args.steps):
        trace = os.path.join(args.out, f"{name}_{n}_steps.json.gz")
        status, result = run_program([args.cli, "run", "-o", trace, "--"] + command + ["--steps", str(n)],
                                     os.path.join(args.out, f"{name}_{n}_steps.log"), args.run_timeout)
        if status != 0:
            problems.append(f"the traced run of {n} steps " + ("hung" if status is None else f"ended with {status}"))
            continue
        if n == args.steps and (result or {}).get("loss") != plain.get("loss"):
            problems.append(f"the traced run computed {(result or {}).get('loss')}, the plain run {plain.get('loss')}")
        found = kernels_of(args.cli, trace)
        if isinstance(found, str):
            problems.append(found)
            continue
        kernels[n] = found
        if found[0] == 0:
            problems.append(f"no kernel in the trace of {n} steps")
        if found[2]:
            problems.append(f"{found[2]} kernels without a name in the trace of {n} steps")
    return problems, kernels


def compare_step_counts(steps, once, twice):
    """(detail, problems) of the traces of STEPS and 2 x STEPS steps: the second must hold the
    first's kernels, by name, and the same number again for each further step."""
    (count, names, _), (count2, names2, _) = once, twice
    added, remainder = divmod(count2 - count, steps)
    detail = f"; {count} kernels ({len(names)} names) in {steps} steps, {count2} in {2 * steps}"
    problems = []
    if count2 <= count or remainder:
        problems.append(f"{count2 - count} more kernels for {steps} more steps: not the same number each step")
    else:
        detail += f": {added} a step"
    if names != names2:
        differ = sorted(names ^ names2)
        problems.append(f"{len(differ)} kernel names in one trace only, e.g. {differ[0][:120]!r}")
    return detail, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--out", required=True, help="directory for the traces and each run's output")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--run-timeout", type=float, default=600,
                        help="seconds after which a run is taken for hung: its stacks are written, then it is killed")
    args, command = parser.parse_known_args()
    command = command[1:] if command[:1] == ["--"] else command
    if not command:
        parser.error("no program given after --")
    if args.steps < 1 or args.run_timeout <= 0:
        parser.error("--steps must be at least 1 and --run-timeout above 0")
    os.makedirs(args.out, exist_ok=True)
    no_core_files()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))  # run_job's cleanup then kills the job
    # The files are named after the program's script (the first .py given), else its command.
    script = next((part for part in command if part.endswith(".py")), command[0])
    name = os.path.splitext(os.path.basename(script))[0]
    plain_status, plain = run_program(command + ["--steps", str(args.steps)], os.path.join(args.out, f"{name}_plain.log"),
                                      args.run_timeout)
    if plain_status != 0 or plain is None:
        print(f"FAIL: the plain run ended with {plain_status}" + ("" if plain else ", printing no result"))
        return 1
    problems, kernels = traced_runs(args, command, name, plain)
    detail = f"{plain.get('framework')} {plain.get('version')} on {plain.get('device')}: result {plain.get('loss')}"
    if len(kernels) == 2:
        counts, count_problems = compare_step_counts(args.steps, kernels[args.steps], kernels[2 * args.steps])
        detail += counts
        problems += count_problems
    print(detail)
    print(("FAIL: " + "; ".join(problems)) if problems else f"PASS: {detail}")
    return 1 if problems else 0

if __name__ == "__main__":
    sys.exit(main())
