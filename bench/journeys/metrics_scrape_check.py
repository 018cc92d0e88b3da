#!/usr/bin/env python3
"""Journey 2 on a GPU: a PyTorch job serving metrics is scraped every INTERVAL seconds for
its whole run; it must end normally (no signal, exit 0), every scrape after the first answer
must be answered, and the last scrape (taken while the job lingers after its last step) must
agree with the run's own record:

  trace:     `cudascope run --metrics ADDR -o T -- JOB`: cudascope_kernels_total summed equals the
             kernel count `cudascope stats --json T` reads from the trace of the same run, and
             cudascope_sync_total summed equals the trace's synchronize calls (a default trace
             takes no synchronisation records; the metrics count the calls as the host's waits);
  count N:   (--no-trace, every kernel recorded, the default) the kernel total equals N, the
             count of a traced run of the same deterministic job;
  estimate N: (--no-trace with CUDASCOPE_METRICS_SAMPLING=1) the sampling ratio is exported
             and cudascope_kernels_estimated_total lies within --tolerance of N, relatively (the
             estimator's error bound is tested in tests/metrics; here: the job's figures are
             served, and are of the right size);
  allocator: a job on cudascope's allocator with CUDASCOPE_METRICS=ADDR: the last scrape's
             allocated/reserved peak bytes equal the memory_stats the job printed (JSON line).

  metrics_scrape_check.py --addr ADDR --interval 0.2 [--trace T --cudascope CLI | --kernels N |
                          --estimated N [--tolerance F] | --allocator] -- COMMAND...
Prints the figures and a PASS/FAIL line; exit 1 on failure."""
import argparse
import gzip
import json
import re
import subprocess
import sys
import time
import urllib.request


def scrape_while_running(command, addr, interval):
    """Scrapes until the job ends. A scrape that fails between two answered ones is a miss;
    those before the server is up and after the job has closed it are not."""
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    answered, missed, failing, last = 0, 0, 0, None
    while child.poll() is None:
        time.sleep(interval)
        try:
            with urllib.request.urlopen(f"http://{addr}/metrics", timeout=5) as r:
                last = r.read().decode()
            answered += 1
            missed += failing if answered > 1 else 0
            failing = 0
        except OSError:
            failing += 1
    stdout = child.stdout.read()
    return child.returncode, answered, missed, last, stdout


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def metric_sum(text, name, **only):
    """The sum of NAME's samples whose labels include ONLY (kernel names hold braces and
    quotes, so labels are parsed, not matched by a pattern)."""
    total = 0.0
    for line in text.splitlines():
        m = SAMPLE.match(line)
        if not m or m.group(1) != name:
            continue
        labels = dict(LABEL.findall(m.group(2) or ""))
        if all(labels.get(k) == v for k, v in only.items()):
            total += float(m.group(3))
    return total


# The runtime calls the metrics count as host waits beside a trace (profile_metrics.cpp,
# host_wait_of_call), with or without their per-thread-stream suffix.
HOST_WAIT_CALL = re.compile(r"^cuda(Stream|Event|Device|Thread)Synchronize(_ptsz)?$")


def synchronize_calls(trace_path):
    """The trace's runtime calls that wait on the device."""
    opener = gzip.open if trace_path.endswith(".gz") else open
    with opener(trace_path, "rt") as f:
        events = json.load(f)["traceEvents"]
    return sum(1 for e in events if e.get("cat") == "cuda_runtime" and HOST_WAIT_CALL.match(e.get("name", "")))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", required=True)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--trace")
    parser.add_argument("--cudascope")
    parser.add_argument("--kernels", type=int)
    parser.add_argument("--estimated", type=int)
    parser.add_argument("--tolerance", type=float, default=0.5)
    parser.add_argument("--allocator", action="store_true")
    parser.add_argument("--save-last", help="write the last scrape here")
    args, command = parser.parse_known_args()
    command = command[1:] if command[:1] == ["--"] else command
    rc, answered, missed, last, stdout = scrape_while_running(command, args.addr, args.interval)
    problems = []
    if rc != 0:
        problems.append(f"the job ended with {'signal ' + str(-rc) if rc < 0 else 'exit ' + str(rc)}")
    if last is None:
        problems.append("no scrape was answered")
        last = ""
    if missed:
        problems.append(f"{missed} scrapes unanswered while the job ran")
    if args.save_last:
        open(args.save_last, "w").write(last)
    detail = f"{answered} scrapes every {args.interval} s"
    kernels = metric_sum(last, "cudascope_kernels_total")
    if args.trace:
        run = subprocess.run([args.cudascope, "stats", "--json", args.trace], capture_output=True, text=True)
        traced = sum(r["count"] for r in json.loads(run.stdout)["kernels"]) if run.returncode == 0 else None
        detail += f"; kernels: last scrape {kernels:.0f}, trace {traced}"
        if traced is None or kernels != traced:
            problems.append("the last scrape's kernel total differs from the trace's")
        waits, calls = metric_sum(last, "cudascope_sync_total"), synchronize_calls(args.trace)
        detail += f"; host waits: last scrape {waits:.0f}, synchronize calls in the trace {calls}"
        if waits != calls:
            problems.append("the last scrape's host waits differ from the trace's synchronize calls")
    if args.kernels is not None:
        detail += f"; kernels: last scrape {kernels:.0f}, traced run {args.kernels}"
        if kernels != args.kernels:
            problems.append("the last scrape's kernel total differs from the traced run's")
    if args.estimated is not None:
        estimate = metric_sum(last, "cudascope_kernels_estimated_total")
        ratio = metric_sum(last, "cudascope_kernel_sampling_ratio")
        detail += (f"; kernels: last scrape's estimate {estimate:.0f} at sampling ratio {ratio:.3f}, "
                   f"traced run {args.estimated}")
        if not 0 < ratio < 1:
            problems.append("no sampling ratio between 0 and 1 was exported")
        if abs(estimate - args.estimated) > args.tolerance * args.estimated:
            problems.append(f"the estimate is off the traced count by more than {args.tolerance:.0%}")
    if args.allocator:
        printed = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
        stats = printed[-1]["stats"] if printed else {}
        for key, metric in (("allocated_bytes.all.peak", "cudascope_memory_allocated_peak_bytes"),
                            ("reserved_bytes.all.peak", "cudascope_memory_reserved_peak_bytes")):
            scraped = metric_sum(last, metric, pool="all")
            detail += f"; {metric} {scraped:.0f} vs job's {key} {stats.get(key)}"
            if scraped != stats.get(key):
                problems.append(f"{metric} differs from the job's {key}")
    print(("PASS: " if not problems else "FAIL: " + "; ".join(problems) + " -- ") + detail)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
