#!/usr/bin/env python3
"""What metrics-only (as it records by default, or any configuration of run_overhead_bench.py's
run under `cudascope run`, e.g. `metrics-only sampled`) costs the launch-bound MLP loop (or, with
--loop transformer, the compute-bound transformer step), measured inside each process (issue 22):
a second estimator beside run_overhead_bench.py, whose plain runs move 15-25% from process to
process (memory layout, where the scheduler and the caches leave a launch-bound loop), more
than the 2% budget.

Each run is one process of overhead_workloads.py --paired D, under
`cudascope run --metrics ADDR --no-trace --delay D --duration T` (metrics-only) or alone
(plain). The loop runs before the recording, during it and after it (paired_phases.py): the
process's own phases on either side are the baseline, so what varies between processes cancels,
and so does a drift of the loop's speed that is linear over the process's life (a plain
process's second phase moved -4% to +7% from its first on an H100, more than the budget). A
process's ratio is its recorded phase's seconds per step over the mean of its before and after
phases'; the plain run of the same round gives the ratio of the same phases without any
recording (what the sides leave of the drift), and the round's cost is the recorded ratio over
the plain one. Each recorded process's after phase over its before phase, against the plain
run's, shows what a recording leaves behind once stopped (CUPTI stays loaded): were it not
nothing, the sides would understate the cost, and the table says so.

What it does not see: anything a recording costs only when it starts with the process (CUPTI
attached at cuInit rather than mid-run), and start-up itself; run_overhead_bench.py times
those.

  python3 bench/profiler/run_paired_overhead.py --cli BUILD/cli/cudascope [--rounds 9]
      [--configs metrics-only,mo-kernel-kinds,mo-no-windows,...] [--delay 12] [--phase 5]
      [--loop mlp|transformer]

--configs takes any of run_overhead_bench.py's configurations run under `cudascope run` (the
mo-* diagnostics, the traces), each a process of its own in every round beside the one plain
process, in an order rotated each round; each gets its cost per round against the plain run.

Ends with `PASS metrics-only (paired, LOOP): R (...)` when the median of the rounds' costs is at most
1.02, else FAIL. About 30 s a process: a minute a round with metrics-only alone."""
import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

from paired_phases import recorded_over_sides, shortest_duration
from run_overhead_bench import (BUDGET, WORKLOAD, child_environment, configs, free_port, gpu_local_cpus, parse_cpus,
                                quartiles)

MARKER = "OVERHEAD_PHASES "
# The recording's delay: the loop's warm-up (the model, cuBLAS's first calls, 20 steps: 3-5 s on
# an H100) and a before phase of several seconds must fit in it, less the phase's margin.
DEFAULT_DELAY_S = 12.0
# Each phase's length: for the sampled configurations, a handful of sampling periods (a window's
# slot is random in each 1 s period, so a phase holds about one window a second).
DEFAULT_PHASE_S = 5.0


class DelayTooShort(Exception):
    """The loop was not ready before the recording could start: every round would fail alike."""


def run_once(config, args):
    """(recorded phase's seconds per step over its sides', the same of CPU seconds, after phase's
    seconds per step over before's), or None. `config` None: the plain process."""
    duration = shortest_duration(args.phase)
    workload = [sys.executable, WORKLOAD, "--paired", str(args.delay), "--paired-duration", str(duration),
                "--paired-phase", str(args.phase), "--loop", args.loop]
    argv = workload
    if config is not None:
        wrapped = [a.format(bind=f"127.0.0.1:{free_port()}", tmp=args.tmp) for a in config.cudascope_args]
        argv = [args.cli, "run"] + wrapped + ["--delay", str(args.delay), "--duration", str(duration), "--"] + workload
    env = child_environment(args, config.env if config else {})
    child = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        print("  a run timed out after 120 s", file=sys.stderr)
        return None
    lines = [line for line in stdout.splitlines() if line.startswith(MARKER)]
    if child.returncode != 0 or not lines:
        print(f"  exit {child.returncode}, no phases; stderr ends:\n" + "\n".join(stderr.splitlines()[-15:]),
              file=sys.stderr)
        return None
    phases = json.loads(lines[-1][len(MARKER):])
    if phases["before"]["steps"] == 0:
        raise DelayTooShort(f"the loop was ready {phases['warm_s']:.1f} s after CUDA's start, too late for "
                            f"a before phase under --delay {args.delay:g} (give more than {phases['warm_s'] + 4:.0f})")
    wall, cpu = recorded_over_sides(phases), recorded_over_sides(phases, "cpu_seconds")
    if wall is None:
        print(f"  a phase without a block: {phases}", file=sys.stderr)
        return None
    after_over_before = (phases["after"]["seconds"] / phases["after"]["steps"]) / (
        phases["before"]["seconds"] / phases["before"]["steps"])
    return wall, cpu, after_over_before


def summary(values):
    low, high = quartiles(values)
    return f"{statistics.median(values):.3f}x (min-max {min(values):.3f}-{max(values):.3f}, IQR {low:.3f}-{high:.3f})"


def delayable_configs(names):
    """run_overhead_bench's configurations by name, those under `cudascope run` only (its
    --delay is what this bench needs); SystemExit naming any other."""
    known = {c.name: c for c in configs(count_launches=True) if c.cudascope_args is not None}
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in known]
    if unknown or not wanted:
        problem = f"no configuration {', '.join(unknown)}" if unknown else "names none"
        sys.exit(f"run_paired_overhead: --configs {names!r}: {problem}; those under cudascope run: {', '.join(known)}")
    return [known[n] for n in wanted]


def run_rounds(chosen, args):
    """{config name (None: plain): [(wall ratio, CPU ratio) per complete round]}."""
    ratios = {c.name: [] for c in chosen}
    ratios[None] = []
    runs = [None] + chosen
    for r in range(args.rounds):
        shift = r % len(runs)  # rotated each round: no configuration always first or last
        this_round = {}
        for config in runs[shift:] + runs[:shift]:
            this_round[config.name if config else None] = run_once(config, args)
        if None in this_round.values():
            print(f"round {r + 1}/{args.rounds}: incomplete", file=sys.stderr, flush=True)
            continue
        for name, value in this_round.items():
            ratios[name].append(value)
        costs = ", ".join(f"{c.name} {this_round[c.name][0] / this_round[None][0]:.3f}" for c in chosen)
        plain = this_round[None]
        print(f"round {r + 1}/{args.rounds}: plain recorded/sides {plain[0]:.3f} (after/before {plain[2]:.3f}); "
              f"cost {costs}", file=sys.stderr, flush=True)
    return ratios


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default=os.environ.get("CUDASCOPE_CLI", "build/cli/cudascope"))
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--configs", default="metrics-only",
                        help="run_overhead_bench.py's configurations under cudascope run, comma-separated "
                             "(default metrics-only; the verdict is metrics-only's where it is among them)")
    parser.add_argument("--delay", type=float, default=DEFAULT_DELAY_S,
                        help=f"seconds from CUDA's start to the recording's (default {DEFAULT_DELAY_S:g})")
    parser.add_argument("--phase", type=float, default=DEFAULT_PHASE_S,
                        help=f"seconds of each phase: before (at most), recorded, after (default {DEFAULT_PHASE_S:g})")
    parser.add_argument("--loop", choices=["mlp", "transformer"], default="mlp",
                        help="the launch-bound MLP loop (default) or the compute-bound transformer step")
    parser.add_argument("--cpus", default="auto", help="as run_overhead_bench.py's (default: 4 cores near GPU 0)")
    args = parser.parse_args()
    if not args.phase > 0 or not args.delay > 0:
        sys.exit(f"run_paired_overhead: --phase {args.phase:g} and --delay {args.delay:g} must be above 0")
    args.sample_window = args.sample_period = None  # the sampled configurations' defaults
    chosen = delayable_configs(args.configs)
    if not os.access(args.cli, os.X_OK):
        sys.exit(f"run_paired_overhead: {args.cli} is not an executable cudascope (give --cli)")
    try:
        cpus = gpu_local_cpus(4) if args.cpus == "auto" else None if args.cpus == "none" else parse_cpus(args.cpus)
    except ValueError:
        sys.exit(f"run_paired_overhead: --cpus {args.cpus}: not a list of cores such as 2-5 or 2,3,8")
    if cpus:
        os.sched_setaffinity(0, cpus)
    args.tmp = tempfile.mkdtemp(prefix="paired-overhead-")
    try:
        ratios = run_rounds(chosen, args)
    except DelayTooShort as e:
        print(f"FAIL metrics-only (paired, {args.loop}): {e}")
        return 1
    finally:
        shutil.rmtree(args.tmp, ignore_errors=True)
    plain = ratios[None]
    if not plain:
        print(f"FAIL metrics-only (paired, {args.loop}): no round completed")
        return 1
    print(f"## Recording's cost to the {args.loop} loop, paired phases inside each process: {len(plain)} rounds "
          f"(delay {args.delay:g} s, phases {args.phase:g} s, cores {','.join(map(str, cpus)) if cpus else 'not pinned'})\n")
    print(f"- plain runs, recorded-phase time over its sides' (the drift the sides leave): "
          f"{summary([p[0] for p in plain])}; after over before (the drift itself): {summary([p[2] for p in plain])}")
    for c in chosen:
        wall = [v[0] / p[0] for v, p in zip(ratios[c.name], plain)]
        cpu = [v[1] / p[1] for v, p in zip(ratios[c.name], plain)]
        left = [v[2] / p[2] for v, p in zip(ratios[c.name], plain)]
        print(f"- {c.name}: cost per round (its ratio over the plain run's) {summary(wall)}; "
              f"in CPU seconds of the process {summary(cpu)}; after its stop, over the plain run's "
              f"(what the recording leaves behind) {summary(left)}")
    print()
    if "metrics-only" not in ratios:
        print("(metrics-only not among --configs: no verdict)")
        return 0
    costs = [v[0] / p[0] for v, p in zip(ratios["metrics-only"], plain)]
    cost = statistics.median(costs)
    verdict = "PASS" if cost <= BUDGET else "FAIL"
    print(f"{verdict} metrics-only (paired, {args.loop}): {cost:.3f} (per round {min(costs):.3f}-{max(costs):.3f}) against {BUDGET:.2f}x")
    return 0 if cost <= BUDGET else 1


if __name__ == "__main__":
    sys.exit(main())
