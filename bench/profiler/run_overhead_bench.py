#!/usr/bin/env python3
"""What recording costs a PyTorch job, against its plain run in the same rounds, and how far
the metrics-only estimates are from the counts of a full trace (issue 22).

On a GPU machine with PyTorch, from the repository root:

  python3 bench/profiler/run_overhead_bench.py --cli BUILD/cli/cudascope [--rounds 9] [--quick]

Every run is pinned to the same cores (--cpus; by default 4 cores of GPU 0's NUMA node) and
gets one PYTHONHASHSEED: without that, where the scheduler put a launch-bound loop moved its
time by a third from run to run. Each round runs every configuration once, in an order rotated
by one each round (so no configuration is always first or last), each in a fresh process of
bench/profiler/overhead_workloads.py, which times two loops inside itself: a launch-bound MLP
training loop and a compute-bound transformer training step. Configurations:

  plain             python3 overhead_workloads.py
  metrics-only      cudascope run --metrics ADDR --no-trace, as it records by default: every
                    kernel, no synchronisation or launch records (ActivitySet::metrics_only_defaults)
  metrics-only sampled  the same with CUDASCOPE_METRICS_SAMPLING=1 (kernel records in sampled
                    windows, opt-in: docs/metrics.md, "Sampled kernel records")
  metrics+trace     cudascope run --metrics ADDR -o T.json.gz    (every kernel; exact counts)
  default trace     cudascope run -o T.json.gz
  kernel-only trace cudascope run -o T.json.gz --activities kernel
  torch CUDA        torch.profiler, CUDA activity only
  torch CPU+CUDA    torch.profiler, CPU and CUDA
  (--count-launches adds metrics-only sampled with CUDASCOPE_METRICS_COUNT_LAUNCHES=1)

Run only when --configs names them, to tell where sampled metrics-only's cost comes from:

  mo-kernel-kinds   metrics-only with --activities kernel (no copy, memset, sync, memory records)
  mo-kernel-nvtx    ... kernel,nvtx           (NVTX ranges recorded besides)
  mo-kernel-memory  ... kernel,allocator      (device-memory records kept on besides)
  mo-kernel-copies  ... kernel,memcpy,memset  (copy and memset records in the windows besides)
  mo-kernel-sync    ... kernel,sync           (synchronisation records in the windows besides)
  mo-kernel-launch  ... kernel,launch         (launch calls' runtime records besides: --metrics-label-nvtx's)
  mo-with-sync      metrics-only with synchronisation records besides
                    (kernel,memcpy,memset,sync,nvtx,allocator,overhead)
  mo-nvtx-only      metrics-only with --activities nvtx (CUPTI on, no kind that records work)
  mo-no-windows     metrics-only whose sampled window never opens (window 1 ms every hour)

where the default metrics-only's own cost comes from (every kernel recorded, no sampling):

  mo-exact-kernel      metrics-only with --activities kernel (no copy, memset, NVTX, memory or
                       overhead records)
  mo-exact-no-copies   ... kernel,nvtx,allocator,overhead (the default without copy and memset records)
  mo-exact-no-kernels  ... nvtx,allocator,overhead (what stays on with no work kind: CUPTI, NVTX,
                       device memory, the server)

and where the default trace's margin over torch CUDA comes from:

  trace-with-sync   the default trace with CUPTI's synchronisation records besides (`--activities
                    default,sync`), which the default and torch.profiler's CUDA activity leave out
                    (e.g. --configs "default trace,torch CUDA,trace-with-sync")

Reported per loop: the median seconds of each configuration, the ratio of medians against
plain, and the spread of the per-round ratios (each against the plain run of its own round):
median, min-max and interquartile range; then the process's CPU seconds over each loop (every
thread, the recorder's own included) as a per-round median against plain; then the default
trace over torch CUDA, round by round (issue 22's trace criterion: at or under it). The
estimate's error: the metrics runs scrape their own live metrics at the end of the program
(--metrics-top 1000, so every kernel name has its own series); the sampled metrics-only runs'
cudascope_kernels_estimated_total per kernel name, summed over the rounds, is compared with the
metrics+trace runs' cudascope_kernels_total, which counts every kernel record the trace is
written from (the same program, deterministic shapes: the same kernels in each run).

Ends with `PASS metrics-only: R (spread ...)` when the metrics-only ratio of medians is at most
1.02 on both loops (R: the larger), else `FAIL metrics-only: ...`; without metrics-only among
--configs, with no verdict.

Each process takes about 15 s on an H100 or H200, most of it PyTorch's start: a default run (9
rounds, 8 configurations) about 20 minutes, --quick (5 rounds, fewer transformer steps) about
10, for a first look only; --configs picks fewer.
The MLP loop should last at least one sampling period (1 s by default), so that every round's
loop holds about one sampled window: with a shorter loop only some rounds pay for a window and
their median can miss the cost (the bench warns).

A full trace's cost against torch.profiler's is in the same tables (default trace vs torch
CUDA)."""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "overhead_workloads.py")
LOOPS = [("mlp", "launch-bound MLP + Adam"), ("transformer", "compute-bound transformer step")]
BUDGET = 1.02
MARKER = "OVERHEAD_BENCH "


class Config:
    def __init__(self, name, cudascope_args=None, torch_profiler=None, scrape=False, env=None, diagnostic=False):
        self.name = name
        self.cudascope_args = cudascope_args  # None: not under cudascope run
        self.torch_profiler = torch_profiler
        self.scrape = scrape
        self.env = env or {}
        self.diagnostic = diagnostic  # run only when --configs names it

    @property
    def sampled(self):
        return self.env.get("CUDASCOPE_METRICS_SAMPLING") == "1"


METRICS_ONLY = ["--metrics", "{bind}", "--no-trace", "--window-dir", "{tmp}"]
# metrics-only sampled and the mo-* diagnostics measure the sampled design, which is opt-in
# (docs/metrics.md, "Sampled kernel records"); metrics-only is the default recording.
SAMPLED = {"CUDASCOPE_METRICS_SAMPLING": "1"}


def configs(count_launches):
    out = [
        Config("plain"),
        Config("metrics-only", METRICS_ONLY, scrape=True),
        Config("metrics-only sampled", METRICS_ONLY, scrape=True, env=SAMPLED),
        Config("metrics+trace", ["--metrics", "{bind}", "-o", "{tmp}/metrics_trace.json.gz"], scrape=True),
        Config("default trace", ["-o", "{tmp}/default.json.gz"]),
        Config("kernel-only trace", ["-o", "{tmp}/kernel.json.gz", "--activities", "kernel"]),
        Config("torch CUDA", torch_profiler="cuda"),
        Config("torch CPU+CUDA", torch_profiler="cpu,cuda"),
    ]
    if count_launches:
        out.append(Config("metrics-only+launches", METRICS_ONLY,
                          scrape=True, env={**SAMPLED, "CUDASCOPE_METRICS_COUNT_LAUNCHES": "1"}))
    # Where sampled metrics-only's cost comes from, one piece at a time (only when --configs
    # names them): kernel records alone (no copy, memset, synchronization, memory or overhead
    # records), no sampled window in the run (CUPTI on, its kernel records never).
    out += [
        Config("mo-kernel-kinds", METRICS_ONLY + ["--activities", "kernel"], scrape=True, diagnostic=True, env=SAMPLED),
        # Kernel windows plus one more piece each: which of them carries the rest of the cost.
        Config("mo-kernel-nvtx", METRICS_ONLY + ["--activities", "kernel,nvtx"], scrape=True, diagnostic=True, env=SAMPLED),
        Config("mo-kernel-memory", METRICS_ONLY + ["--activities", "kernel,allocator"], scrape=True, diagnostic=True, env=SAMPLED),
        Config("mo-kernel-copies", METRICS_ONLY + ["--activities", "kernel,memcpy,memset"], scrape=True, diagnostic=True, env=SAMPLED),
        Config("mo-kernel-sync", METRICS_ONLY + ["--activities", "kernel,sync"], scrape=True, diagnostic=True, env=SAMPLED),
        Config("mo-kernel-launch", METRICS_ONLY + ["--activities", "kernel,launch"], scrape=True, diagnostic=True, env=SAMPLED),
        # Metrics-only with the synchronisation records it leaves out by default: what they cost.
        Config("mo-with-sync", METRICS_ONLY + ["--activities", "kernel,memcpy,memset,sync,nvtx,allocator,overhead"],
               scrape=True, diagnostic=True, env=SAMPLED),
        Config("mo-nvtx-only", METRICS_ONLY + ["--activities", "nvtx"], scrape=True, diagnostic=True, env=SAMPLED),
        Config("mo-no-windows", METRICS_ONLY, scrape=True, diagnostic=True,
               env={**SAMPLED, "CUDASCOPE_METRICS_SAMPLE_WINDOW": "0.001", "CUDASCOPE_METRICS_SAMPLE_PERIOD": "3600"}),
        # The exact default, one piece taken out at a time: what kernel records, copy and memset
        # records, and the rest cost when nothing is sampled.
        Config("mo-exact-kernel", METRICS_ONLY + ["--activities", "kernel"], scrape=True, diagnostic=True),
        Config("mo-exact-no-copies", METRICS_ONLY + ["--activities", "kernel,nvtx,allocator,overhead"],
               scrape=True, diagnostic=True),
        Config("mo-exact-no-kernels", METRICS_ONLY + ["--activities", "nvtx,allocator,overhead"],
               scrape=True, diagnostic=True),
        # The default trace with the synchronisation records it leaves out, as torch.profiler's
        # CUDA activity does unless asked (enable_cuda_sync_events): what they cost.
        Config("trace-with-sync", ["-o", "{tmp}/with_sync.json.gz", "--activities", "default,sync"], diagnostic=True),
    ]
    return out


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def gpu_local_cpus(count):
    """`count` cores of the NUMA node GPU 0 hangs off (its PCI device's local_cpulist), core 0
    and its node's first core left to the system; None where the node is not known."""
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader", "-i", "0"],
                             capture_output=True, text=True, timeout=30).stdout.strip().lower()
        # nvidia-smi writes an 8-digit PCI domain, sysfs a 4-digit one.
        with open(f"/sys/bus/pci/devices/{bus[-12:]}/local_cpulist") as f:
            text = f.read().strip()
    except (OSError, subprocess.SubprocessError):
        return None
    cpus = parse_cpus(text)
    allowed = os.sched_getaffinity(0)
    usable = [c for c in cpus[1:] if c != 0 and c in allowed]
    return usable[:count] if len(usable) >= count else None


def parse_cpus(text):
    """'2-5' or '2,3,8' -> [2, 3, 4, 5] / [2, 3, 8]; ValueError for anything else."""
    cpus = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        first, last = int(low), int(high or low)
        if last < first:
            raise ValueError(part)
        cpus += range(first, last + 1)
    return cpus


def child_environment(args, extra):
    """This environment without inherited CUDASCOPE_* settings (a CUDASCOPE_METRICS_SAMPLING=0
    left in the shell would change what metrics-only measures), plus the bench's own. One
    PYTHONHASHSEED for every run: Python's string hashing is seeded per process, and the
    layout of its dicts then differs from run to run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CUDASCOPE_")}
    env["PYTHONHASHSEED"] = "0"
    if args.sample_window is not None:
        env["CUDASCOPE_METRICS_SAMPLE_WINDOW"] = str(args.sample_window)
    if args.sample_period is not None:
        env["CUDASCOPE_METRICS_SAMPLE_PERIOD"] = str(args.sample_period)
    env.update(extra)
    return env


def run_once(config, args, tmp, round_index):
    """Runs one configuration; returns {"mlp_seconds", "transformer_seconds", "scrape"} or None."""
    port = free_port()
    scrape_file = os.path.join(tmp, f"scrape-{config.name.replace(' ', '_')}-{round_index}.txt")
    workload = [sys.executable, WORKLOAD, "--mlp-steps", str(args.mlp_steps),
                "--transformer-steps", str(args.transformer_steps)]
    if config.torch_profiler:
        workload += ["--torch-profiler", config.torch_profiler]
    if config.scrape:
        workload += ["--scrape-port", str(port), "--scrape-out", scrape_file]
    argv = workload
    if config.cudascope_args is not None:
        wrapped = [a.format(bind=f"127.0.0.1:{port}", tmp=tmp) for a in config.cudascope_args]
        if config.scrape:
            wrapped += ["--metrics-top", "1000"]
        argv = [args.cli, "run"] + wrapped + ["--"] + workload
    # A session of its own, so a run that hangs is killed with the program cudascope run started.
    child = subprocess.Popen(argv, env=child_environment(args, config.env), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        print(f"  {config.name} round {round_index}: timed out after {args.timeout} s", file=sys.stderr)
        return None
    finally:
        for name in os.listdir(tmp):  # traces and windows: only the timings and scrapes are kept
            if name.endswith((".json", ".json.gz")):
                os.remove(os.path.join(tmp, name))
    lines = [l for l in stdout.splitlines() if l.startswith(MARKER)]
    if child.returncode != 0 or not lines:
        print(f"  {config.name} round {round_index}: exit {child.returncode}, no timing; stderr ends:\n"
              + "\n".join(stderr.splitlines()[-15:]), file=sys.stderr)
        return None
    result = json.loads(lines[-1][len(MARKER):])
    result["scrape"] = scrape_file if config.scrape and os.path.exists(scrape_file) else None
    return result


# --- Prometheus text exposition -------------------------------------------------------------

LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)")


def parse_labels(text):
    """{k="v",...} with the exposition format's escapes (\\\\, \\", \\n) in values."""
    labels, i = {}, 1
    while i < len(text) - 1:
        eq = text.index("=", i)
        key = text[i:eq].strip().lstrip(",").strip()
        i = eq + 2  # past ="
        value = []
        while text[i] != '"':
            if text[i] == "\\":
                i += 1
                value.append("\n" if text[i] == "n" else text[i])
            else:
                value.append(text[i])
            i += 1
        labels[key] = "".join(value)
        i += 1
        while i < len(text) - 1 and text[i] in ", ":
            i += 1
    return labels


def parse_exposition(text):
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2), m.group(3)
        # A label value may hold spaces: the value is what follows the closing brace.
        if labels is not None:
            close = line.rindex("}")
            labels, value = line[len(name):close + 1], line[close + 1:].split()[0]
        samples.append((name, parse_labels(labels) if labels else {}, float(value)))
    return samples


def by_kernel(path, family):
    totals = {}
    with open(path) as f:
        for name, labels, value in parse_exposition(f.read()):
            if name == family:
                totals[labels.get("kernel", "")] = totals.get(labels.get("kernel", ""), 0.0) + value
    return totals


def family_total(path, family):
    with open(path) as f:
        return sum(v for n, _, v in parse_exposition(f.read()) if n == family)


# --- Figures ----------------------------------------------------------------------------------

def quartiles(values):
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], q[2]


def loop_table(loop, title, results, config_names):
    plain = results["plain"]
    plain_median = statistics.median([r[f"{loop}_seconds"] for r in plain.values()])
    print(f"\n### {title}\n")
    print("| run | median s | / plain (medians) | per-round ratio median | min-max | IQR | rounds |")
    print("|---|---|---|---|---|---|---|")
    ratios_of = {}
    for name in config_names:
        rounds = results[name]
        if not rounds:
            print(f"| {name} | failed | | | | | 0 |")
            continue
        seconds = [r[f"{loop}_seconds"] for r in rounds.values()]
        median = statistics.median(seconds)
        per_round = [rounds[i][f"{loop}_seconds"] / plain[i][f"{loop}_seconds"] for i in rounds if i in plain]
        low, high = quartiles(per_round) if per_round else (float("nan"), float("nan"))
        ratio = median / plain_median
        ratios_of[name] = (ratio, per_round)
        spread = f"{min(per_round):.3f}-{max(per_round):.3f}" if per_round else "-"
        middle = f"{statistics.median(per_round):.3f}x" if per_round else "-"
        print(f"| {name} | {median:.4f} | {ratio:.3f}x | {middle} | {spread} | {low:.3f}-{high:.3f} | {len(seconds)} |")
    return ratios_of


def cpu_table(results, config_names):
    """The process's CPU seconds over each loop (every thread, the recorder's included), per
    round against the plain run of that round: what recording costs the host, beside the wall
    time the budget is on."""
    plain = results["plain"]
    rows = []
    for name in config_names:
        if name == "plain":
            continue
        cells = []
        for loop, _ in LOOPS:
            key = f"{loop}_cpu_seconds"
            per_round = [r[key] / plain[i][key] for i, r in results[name].items()
                         if i in plain and key in r and plain[i].get(key)]
            cells.append(f"{statistics.median(per_round):.3f}x" if per_round else "-")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
    if rows:
        print("\n### The process's CPU time over each loop, per-round median against plain\n")
        print("| run | " + " | ".join(title for _, title in LOOPS) + " |")
        print("|---|" + "---|" * len(LOOPS))
        print("\n".join(rows))


def switch_table(results, sampled_names):
    """Per sampled metrics configuration: what CUPTI's kernel records cost to switch on and off,
    per run."""
    rows = []
    for name in sampled_names:
        scrapes = [r["scrape"] for r in results[name].values() if r.get("scrape")]
        if scrapes:
            switches = statistics.mean([family_total(p, "cudascope_kernel_sampling_switches_total") for p in scrapes])
            seconds = statistics.mean([family_total(p, "cudascope_kernel_sampling_switch_seconds_total") for p in scrapes])
            ratio = statistics.mean([family_total(p, "cudascope_kernel_sampling_ratio") for p in scrapes])
            rows.append(f"| {name} | {len(scrapes)} | {switches:.1f} | {1e3 * seconds:.2f} | {ratio:.4f} |")
    if rows:
        print("\n### Switches of CUPTI's kernel records, per run (means over the scraped runs)\n")
        print("| run | scraped runs | switches | switch ms in all | sampling ratio |")
        print("|---|---|---|---|---|")
        print("\n".join(rows))


def trace_over_torch(results):
    """Issue 22's trace criterion, the default trace at or under torch.profiler's CUDA-only run:
    per loop, each round's default trace over the same round's torch CUDA run, so that what
    moves from round to round (both against one plain run) cancels. Rounds without both are
    left out. {loop: [ratio per round]}, empty without a round of both."""
    trace, torch_cuda = results.get("default trace", {}), results.get("torch CUDA", {})
    rounds = [i for i in trace if i in torch_cuda]
    if not rounds:
        return {}
    return {loop: [trace[i][f"{loop}_seconds"] / torch_cuda[i][f"{loop}_seconds"] for i in rounds] for loop, _ in LOOPS}


def trace_against_torch_table(results):
    ratios_of = trace_over_torch(results)
    if not ratios_of:
        return
    print("\n### The default trace against torch.profiler's CUDA activity, per round\n")
    print("| loop | default trace / torch CUDA, median | min-max | rounds | at or under torch CUDA |")
    print("|---|---|---|---|---|")
    for loop, title in LOOPS:
        ratios = ratios_of[loop]
        middle = statistics.median(ratios)
        print(f"| {title} | {middle:.4f}x | {min(ratios):.4f}-{max(ratios):.4f} | {len(ratios)} | "
              f"{'yes' if middle <= 1.0 else 'no'} |")


def estimate_table(results, count_launches):
    sampled = [r["scrape"] for r in results.get("metrics-only sampled", {}).values() if r.get("scrape")]
    exact = [r["scrape"] for r in results.get("metrics+trace", {}).values() if r.get("scrape")]
    print("\n### Metrics-only estimates against the counts of a full trace\n")
    if not sampled or not exact:
        print("no scrapes to compare (see the errors above)")
        return
    estimate, count, est_seconds, exact_seconds = {}, {}, {}, {}
    for path in sampled:
        for k, v in by_kernel(path, "cudascope_kernels_estimated_total").items():
            estimate[k] = estimate.get(k, 0.0) + v
        for k, v in by_kernel(path, "cudascope_kernel_seconds_estimated_total").items():
            est_seconds[k] = est_seconds.get(k, 0.0) + v
    # Scaled to as many runs as the sampled ones: each run launches the same kernels.
    scale = len(sampled) / len(exact)
    for path in exact:
        for k, v in by_kernel(path, "cudascope_kernels_total").items():
            count[k] = count.get(k, 0.0) + v * scale
        for k, v in by_kernel(path, "cudascope_kernel_seconds_total").items():
            exact_seconds[k] = exact_seconds.get(k, 0.0) + v * scale
    ratio = statistics.mean([family_total(p, "cudascope_kernel_sampling_ratio") for p in sampled])
    switches = sum(family_total(p, "cudascope_kernel_sampling_switches_total") for p in sampled)
    switch_seconds = sum(family_total(p, "cudascope_kernel_sampling_switch_seconds_total") for p in sampled)
    records = sum(family_total(p, "cudascope_kernel_sampled_records_total") for p in sampled)
    total_est, total_count = sum(estimate.values()), sum(count.values())
    missed = sum(v for k, v in count.items() if k not in estimate)
    print(f"{len(sampled)} sampled metrics-only runs against {len(exact)} traced runs; mean sampling ratio {ratio:.4f}; "
          f"{records:.0f} kernel records sampled; {switches:.0f} switches of CUPTI's kernel records, "
          f"{1e6 * switch_seconds / max(switches, 1):.1f} us each on average.\n")
    print(f"- all kernels: estimated {total_est:.0f}, counted {total_count:.0f}, "
          f"error {100 * (total_est - total_count) / max(total_count, 1):+.2f}%")
    t_est, t_count = sum(est_seconds.values()), sum(exact_seconds.values())
    print(f"- GPU time in kernels: estimated {t_est:.4f} s, counted {t_count:.4f} s, "
          f"error {100 * (t_est - t_count) / max(t_count, 1e-12):+.2f}%")
    print(f"- kernels of names never sampled: {missed:.0f} ({100 * missed / max(total_count, 1):.2f}% of all)")
    weighted = sum(abs(estimate.get(k, 0.0) - v) for k, v in count.items()) / max(total_count, 1)
    print(f"- per-name absolute error, weighted by count: {100 * weighted:.2f}%\n")
    print("| kernel (top 12 by count) | counted | estimated | error |")
    print("|---|---|---|---|")
    for k, v in sorted(count.items(), key=lambda kv: -kv[1])[:12]:
        e = estimate.get(k, 0.0)
        shown = (k if len(k) <= 70 else k[:67] + "...").replace("|", "\\|")
        print(f"| `{shown}` | {v:.0f} | {e:.0f} | {100 * (e - v) / max(v, 1):+.1f}% |")
    if count_launches:
        launch_runs = [r["scrape"] for r in results.get("metrics-only+launches", {}).values() if r.get("scrape")]
        if launch_runs:
            launches = statistics.mean([family_total(p, "cudascope_kernel_launches_total") for p in launch_runs])
            per_run = total_count / len(sampled)
            print(f"\n- exact launch calls (CUDASCOPE_METRICS_COUNT_LAUNCHES=1): {launches:.0f} per run; kernels "
                  f"counted by the trace: {per_run:.0f} per run ({100 * (launches - per_run) / max(per_run, 1):+.2f}%)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default=os.environ.get("CUDASCOPE_CLI", "build/cli/cudascope"),
                        help="the cudascope command (default: $CUDASCOPE_CLI or build/cli/cudascope)")
    parser.add_argument("--rounds", type=int, default=None, help="rounds (default 9; 5 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help="5 rounds and a third of the transformer steps: a first look, not a result")
    parser.add_argument("--mlp-steps", type=int, default=1500,
                        help="MLP steps timed per run (default 1500; the loop should last at least a sampling period)")
    parser.add_argument("--transformer-steps", type=int, default=None, help="transformer steps per run (default 30)")
    parser.add_argument("--count-launches", action="store_true",
                        help="also sampled metrics-only with CUDASCOPE_METRICS_COUNT_LAUNCHES=1 (exact launch counts)")
    parser.add_argument("--sample-window", type=float, default=None, help="CUDASCOPE_METRICS_SAMPLE_WINDOW (s)")
    parser.add_argument("--sample-period", type=float, default=None, help="CUDASCOPE_METRICS_SAMPLE_PERIOD (s)")
    parser.add_argument("--timeout", type=int, default=180, help="seconds one run may take")
    parser.add_argument("--cpus", default="auto",
                        help="cores every run is pinned to, e.g. 2-5 (default auto: 4 cores of GPU 0's NUMA "
                             "node; none: not pinned)")
    parser.add_argument("--configs", default=None,
                        help="comma-separated configurations to run beside plain (default: all), e.g. metrics-only")
    args = parser.parse_args()
    args.rounds = args.rounds or (5 if args.quick else 9)
    args.transformer_steps = args.transformer_steps or (10 if args.quick else 30)
    if args.cpus == "none":
        args.cpus = None
    elif args.cpus == "auto":
        args.cpus = gpu_local_cpus(4)
    else:
        try:
            args.cpus = parse_cpus(args.cpus)
        except ValueError:
            sys.exit(f"run_overhead_bench: --cpus {args.cpus}: not a list of cores such as 2-5 or 2,3,8")
        missing = set(args.cpus) - os.sched_getaffinity(0)
        if missing:
            sys.exit(f"run_overhead_bench: --cpus: cores {sorted(missing)} are not available to this process")
    if args.cpus:
        # Every run on the same cores (children inherit this process's): where the scheduler
        # puts a launch-bound loop moves its time by a third from run to run otherwise.
        os.sched_setaffinity(0, args.cpus)
    if not os.access(args.cli, os.X_OK):
        sys.exit(f"run_overhead_bench: {args.cli} is not an executable cudascope (give --cli)")

    config_list = configs(args.count_launches)
    if args.configs:
        wanted = {"plain"} | {name.strip() for name in args.configs.split(",")}
        unknown = wanted - {c.name for c in config_list}
        if unknown:
            sys.exit(f"run_overhead_bench: --configs: unknown {', '.join(sorted(unknown))}; "
                     f"known: {', '.join(c.name for c in config_list)}")
        config_list = [c for c in config_list if c.name in wanted]
    else:
        config_list = [c for c in config_list if not c.diagnostic]
    names = [c.name for c in config_list]
    sampled_names = [c.name for c in config_list if c.sampled]
    results = {name: {} for name in names}
    tmp = tempfile.mkdtemp(prefix="cudascope-overhead-")
    try:
        device = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                capture_output=True, text=True).stdout.strip().splitlines()
    except OSError:
        device = []
    started = time.time()
    try:
        for r in range(args.rounds):
            order = config_list[r % len(config_list):] + config_list[:r % len(config_list)]
            for config in order:
                result = run_once(config, args, tmp, r)
                if result is not None:
                    results[config.name][r] = result
                    # As it goes: a run cut short at its time limit still leaves the figures so far.
                    print(f"  round {r + 1} {config.name}: mlp {result['mlp_seconds']:.4f} s, "
                          f"transformer {result['transformer_seconds']:.4f} s", file=sys.stderr, flush=True)
            print(f"round {r + 1}/{args.rounds} done, {time.time() - started:.0f} s", file=sys.stderr, flush=True)

        print(f"## Recording overhead, {args.rounds} rounds alternating "
              f"({device[0] if device else 'unknown device'}; {time.strftime('%Y-%m-%d')})\n")
        sampling = (f" Sampling ({', '.join(sampled_names)}): window {args.sample_window or 0.05} s every "
                    f"{args.sample_period or 1} s." if sampled_names else "")
        print(f"Each loop timed inside its process: {args.mlp_steps} MLP steps, {args.transformer_steps} transformer "
              f"steps.{sampling} Runs pinned to cores {','.join(map(str, args.cpus)) if args.cpus else 'none (not pinned)'}.")
        if not results["plain"]:
            print("\nFAIL metrics-only: no plain run succeeded")
            return 1
        period = args.sample_period or 1.0
        plain_mlp = statistics.median([r["mlp_seconds"] for r in results["plain"].values()])
        if sampled_names and plain_mlp < period:
            # One window per period at a random slot: a shorter loop holds a window in only some
            # rounds, and the median of the rounds can miss what the windows cost.
            print(f"\nWARNING: the MLP loop ({plain_mlp:.2f} s) is shorter than the sampling period ({period} s); "
                  f"raise --mlp-steps for a result.")
        verdicts = []
        for loop, title in LOOPS:
            ratios = loop_table(loop, title, results, names)
            if "metrics-only" in ratios:
                ratio, per_round = ratios["metrics-only"]
                verdicts.append((ratio, f"{loop} {ratio:.3f}x, per-round {min(per_round):.3f}-{max(per_round):.3f}"))
        cpu_table(results, names)
        trace_against_torch_table(results)
        switch_table(results, sampled_names)
        estimate_table(results, args.count_launches)
        print(f"\n{time.time() - started:.0f} s in all.\n")
        if "metrics-only" not in names:
            print("(metrics-only not among --configs: no verdict)")
            return 0
        if len(verdicts) < len(LOOPS):
            print("FAIL metrics-only: no metrics-only run succeeded")
            return 1
        worst = max(v[0] for v in verdicts)
        spread = "; ".join(v[1] for v in verdicts)
        print(f"{'PASS' if worst <= BUDGET else 'FAIL'} metrics-only: {worst:.3f} (spread {spread}) against {BUDGET:.2f}x")
        return 0 if worst <= BUDGET else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
