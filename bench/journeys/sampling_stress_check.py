#!/usr/bin/env python3
"""Sampled metrics-only recording under stress on a GPU: a PyTorch job run again and again under
`cudascope run --metrics ADDR --no-trace` with CUDASCOPE_METRICS_SAMPLING=1 and kernel records
switched on and off far more often than the sampled default (a WINDOW in every PERIOD: by
default 5 ms in every 10 ms, 200 switches a second against the default's 2), from CUDA's start
through the job's first cuBLAS calls and its steps. No run may end other than normally.

Sampling is opt-in because this check has failed: CUPTI's own worker thread died of SIGSEGV in
such runs on an H100 and an H200 (docs/metrics.md, "Sampled kernel records"). Each run has
crash_stack.c preloaded, so that a crash leaves the native stack of its faulting thread (named
by crash_stacks.py) and Python's stacks in OUT/run_N.log, and a run that hangs (RUN_TIMEOUT_S)
leaves every thread's native stack there, of each of its processes, before it is killed. Each run is scraped while it runs,
and a sampled run must show at least 20 switches a second in its last scrape (a setting the
recording refused would leave the default's two). --parallel runs several at once on the one
GPU, for more switches in the same time. With --control N, N more runs record every kernel
without switching (CUDASCOPE_METRICS_SAMPLING=0): crashes there too would mean the switching is
not the cause. Each --variant LABEL:VAR=VALUE[,VAR=VALUE...] adds --runs more sampled runs with
those variables set (CUPTI's settings to try, e.g. CUDASCOPE_CUPTI_PER_THREAD_BUFFERS=0),
alternating with the plain ones, so that the machine's state weighs on each alike; the summary
counts each variant's failures apart.
The job should linger a moment after its last step (torch_train.py --linger 1) so that the
last scrape sees the whole run.

  sampling_stress_check.py --cli CLI --out DIR [--runs 6] [--control 0] [--window 0.005]
                           [--period 0.01] [--parallel 1] [--run-timeout 300]
                           [--variant LABEL:VAR=VALUE[,VAR=VALUE...]]... -- JOB...
Prints a line per run and a PASS/FAIL line; exit 1 on failure."""
import argparse
import concurrent.futures
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from crash_stacks import Symbols, build_library, job_environment, kill_live_jobs, no_core_files, run_job, symbolize
from metrics_scrape_check import metric_sum

RUN_TIMEOUT_S = 300
SCRAPE_INTERVAL_S = 0.5
# A sampled run must show it was switched: at 200 a second, a job of several seconds switches
# a thousand times; a setting the recording refused would leave the default's two a second.
MIN_SWITCHES_PER_S = 20


def free_ports(count):
    """COUNT distinct ports free now: all held open together, so no two are the same."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def describe(returncode, run_timeout):
    """A job's end in words (None: it hung): cudascope run passes a signal on as 128 + its number."""
    if returncode is None:
        return f"hung (no end in {run_timeout:g} s), its stacks written and killed"
    if returncode == 0:
        return "exit 0"
    if returncode < 0:
        return f"signal {signal.Signals(-returncode).name} (of cudascope run itself)"
    if returncode > 128 and returncode - 128 in signal.valid_signals():
        return f"exit {returncode}: the job ended by {signal.Signals(returncode - 128).name}"
    return f"exit {returncode}"


def parse_variant(text):
    """LABEL:VAR=VALUE[,VAR=VALUE...] as (LABEL, {VAR: VALUE}); ValueError naming what is wrong."""
    label, _, assignments = text.partition(":")
    if not label or not assignments:
        raise ValueError(f"--variant {text!r}: expected LABEL:VAR=VALUE[,VAR=VALUE...]")
    env = {}
    for assignment in assignments.split(","):
        name, equals, value = assignment.partition("=")
        if not equals or not name.isidentifier():
            raise ValueError(f"--variant {text!r}: {assignment!r} is not VAR=VALUE")
        env[name] = value
    return label, env


def interleaved_plans(args, variants):
    """(kind, variables) for each run: the plain sampled runs alternating with each variant's,
    then the control runs."""
    sampled = {"CUDASCOPE_METRICS_SAMPLING": "1", "CUDASCOPE_METRICS_SAMPLE_WINDOW": str(args.window),
               "CUDASCOPE_METRICS_SAMPLE_PERIOD": str(args.period)}
    kinds = [("sampled", sampled)] + [(f"sampled, {label}", {**sampled, **env}) for label, env in variants]
    plans = [kind for _ in range(args.runs) for kind in kinds]
    return plans + [("every kernel", {"CUDASCOPE_METRICS_SAMPLING": "0"})] * args.control


def scrape_until(address, done, last):
    """Scrapes ADDRESS until DONE is set, keeping the last answer in last[0]."""
    while not done.wait(SCRAPE_INTERVAL_S):
        try:
            with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as answer:
                last[0] = answer.read().decode()
        except OSError:
            pass  # not serving yet, or no longer


def run_once(args, job, env_extra, log_path, port):
    """One run of JOB under metrics-only recording, scraped while it runs: (return code, None
    if it hung; seconds; kernel-record switches in its last scrape or None). Its output is kept
    in LOG_PATH."""
    address = f"127.0.0.1:{port}"
    command = [args.cli, "run", "--metrics", address, "--no-trace", "--"] + job
    env = dict(os.environ, **env_extra)
    done, last = threading.Event(), [None]
    scraper = threading.Thread(target=scrape_until, args=(address, done, last))
    start = time.monotonic()
    scraper.start()
    with open(log_path, "w") as log:
        log.write(" ".join(f"{k}={v}" for k, v in env_extra.items()) + " " + " ".join(command) + "\n")
        log.flush()
        returncode = run_job(command, log, args.run_timeout, env=env)
    done.set()
    scraper.join()
    switches = metric_sum(last[0], "cudascope_kernel_sampling_switches_total") if last[0] else None
    return returncode, time.monotonic() - start, switches


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--out", required=True, help="directory for each run's log and the preload")
    parser.add_argument("--runs", type=int, default=6)
    parser.add_argument("--control", type=int, default=0, help="runs recording every kernel, without switching")
    parser.add_argument("--window", type=float, default=0.005)
    parser.add_argument("--period", type=float, default=0.01)
    parser.add_argument("--parallel", type=int, default=1, help="runs at once (each its own port and log)")
    parser.add_argument("--run-timeout", type=float, default=RUN_TIMEOUT_S,
                        help="seconds after which a run is taken for hung: its stacks are asked for, then it is killed")
    parser.add_argument("--variant", action="append", default=[],
                        help="LABEL:VAR=VALUE[,VAR=VALUE...]: --runs more sampled runs with these variables")
    args, job = parser.parse_known_args()
    job = job[1:] if job[:1] == ["--"] else job
    if not job:
        parser.error("no job given after --")
    if not os.access(args.cli, os.X_OK):
        parser.error(f"--cli {args.cli}: not an executable")
    if args.runs < 1 or args.control < 0 or args.parallel < 1 or args.run_timeout <= 0:
        parser.error("--runs and --parallel must be at least 1, --control at least 0, --run-timeout above 0")
    try:
        variants = [parse_variant(text) for text in args.variant]
    except ValueError as e:
        parser.error(str(e))
    if len({label for label, _ in variants}) != len(variants):
        parser.error("--variant: each label once")
    os.makedirs(args.out, exist_ok=True)
    try:
        crash_env = job_environment(build_library(args.out))
    except subprocess.CalledProcessError as e:
        print(f"FAIL: cannot build the crash-stack preload: {e.stderr.strip()}")
        return 1
    plans = interleaved_plans(args, variants)
    no_core_files()
    # Stopped (SIGTERM, Ctrl+C): the jobs, each in a session of its own, are killed too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        failed, rates, unswitched = run_all(args, job, plans, crash_env)
    except BaseException:
        kill_live_jobs()
        raise
    bad = sorted(n for runs in failed.values() for n in runs)
    print(("FAIL: " if bad or unswitched else "PASS: ") + summary(args, variants, failed, rates, unswitched) +
          (f" (logs run_{', run_'.join(map(str, bad))})" if bad else ""))
    return 1 if bad or unswitched else 0


def run_all(args, job, plans, crash_env):
    """Runs the PLANS, --parallel at once, printing a line for each: (the runs that did not end
    normally by kind, the switches a second of those that did by kind, the sampled runs that
    switched too seldom)."""
    failed = {kind: [] for kind, _ in plans}
    failed.setdefault("every kernel", [])
    rates = {kind: [] for kind in failed}
    unswitched = []
    symbols = Symbols()
    ports = free_ports(len(plans))

    def run_numbered(numbered):
        n, (kind, sampling_env) = numbered
        log_path = os.path.join(args.out, f"run_{n}.log")
        return n, kind, log_path, run_once(args, job, {**crash_env, **sampling_env}, log_path, ports[n - 1])

    # Runs at once on one GPU: more runs, so more switches, in the same time.
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.parallel) as pool:
        for n, kind, log_path, (returncode, seconds, switches) in pool.map(run_numbered, enumerate(plans, 1)):
            switched = "no scrape answered" if switches is None else f"{switches:.0f} switches"
            print(f"run {n}/{len(plans)} ({kind}): {describe(returncode, args.run_timeout)} after {seconds:.1f} s, "
                  f"{switched}", flush=True)
            if returncode != 0:
                failed[kind].append(n)
                with open(log_path, errors="replace") as f:
                    stacks = symbolize(f.read(), symbols)
                print(stacks or f"  no native stack in {log_path}", flush=True)
            elif kind.startswith("sampled"):
                rates[kind].append((switches or 0) / seconds)
                if rates[kind][-1] < MIN_SWITCHES_PER_S:
                    unswitched.append(n)
    return failed, rates, unswitched


def summary(args, variants, failed, rates, unswitched):
    """The check's last line, without its PASS or FAIL: each kind of run's failures apart."""
    def switch_rates(kind):
        return f", switching {min(rates[kind]):.0f}-{max(rates[kind]):.0f} times a second" if rates[kind] else ""

    switching = f"{args.window * 1e3:g} ms of kernel records in every {args.period * 1e3:g} ms"
    text = f"{args.runs} runs with {switching}: {len(failed['sampled'])} did not end normally{switch_rates('sampled')}"
    for label, env in variants:
        kind, settings = f"sampled, {label}", ",".join(f"{name}={value}" for name, value in env.items())
        text += f"; {args.runs} more with {label} ({settings}): {len(failed[kind])} did not{switch_rates(kind)}"
    if args.control:
        text += f"; {args.control} recording every kernel: {len(failed['every kernel'])} did not"
    if unswitched:
        text += f"; runs {', '.join(map(str, unswitched))} switched fewer than {MIN_SWITCHES_PER_S} times a second"
    return text

if __name__ == "__main__":
    sys.exit(main())
