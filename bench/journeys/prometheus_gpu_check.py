#!/usr/bin/env python3
"""A real Prometheus server scraping two PyTorch training jobs on a GPU machine, checked
through Prometheus's own HTTP API (what Grafana reads):

  wrapped:   `cudascope run --metrics` around bench/profiler/torch_train.py: the kernels
             Prometheus holds for the job equal the kernels in the trace of the same run,
             and the NVTX phase histograms are there;
  allocator: bench/torch_allocator/train_loop.py on cudascope's allocator with
             CUDASCOPE_METRICS: the allocated/reserved bytes (current and peak) Prometheus
             holds equal what the job's own cudascope_torch.memory_stats() printed.

Both jobs linger a few seconds after their last step so that a scrape sees the final
figures. Prints what it compared; exits non-zero on a difference.

Usage: prometheus_gpu_check.py BUILD_DIR OUT_DIR [PROMETHEUS_BINARY]
"""
import json
import os
import pathlib
import subprocess
import sys
import time
import urllib.parse
import urllib.request

build = pathlib.Path(sys.argv[1]).resolve()
out = pathlib.Path(sys.argv[2]).resolve()
prometheus = sys.argv[3] if len(sys.argv) > 3 else "prometheus"
here = pathlib.Path(__file__).resolve().parent
cli = build / "cli" / "cudascope"
lib = build / "lib"
PROM, WRAPPED, ALLOCATOR = "127.0.0.1:9490", "127.0.0.1:9491", "127.0.0.1:9492"
out.mkdir(parents=True, exist_ok=True)
failures = []


def check(what, ok, detail):
    print(("ok   " if ok else "FAIL ") + what + ": " + detail, flush=True)
    if not ok:
        failures.append(what)


def query(expr, at=None):
    url = f"http://{PROM}/api/v1/query?" + urllib.parse.urlencode({"query": expr} | ({"time": at} if at else {}))
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)["data"]["result"]


def scalar(expr, at=None):
    result = query(expr, at)
    return float(result[0]["value"][1]) if result else None


config = out / "prometheus.yml"
config.write_text(f"""global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: wrapped
    static_configs: [{{targets: ["{WRAPPED}"]}}]
  - job_name: allocator
    static_configs: [{{targets: ["{ALLOCATOR}"]}}]
""")
server = subprocess.Popen([prometheus, f"--config.file={config}", f"--storage.tsdb.path={out / 'tsdb'}",
                           f"--web.listen-address={PROM}"], stdout=open(out / "prometheus.log", "w"),
                          stderr=subprocess.STDOUT)
try:
    for _ in range(100):
        try:
            urllib.request.urlopen(f"http://{PROM}/-/ready", timeout=1)
            break
        except OSError:
            time.sleep(0.2)

    # 1. A wrapped job: kernels by name, NVTX phases.
    trace = out / "prom_wrapped.json.gz"
    job = subprocess.Popen([str(cli), "run", "--metrics", WRAPPED, "--metrics-label-nvtx", "-o", str(trace), "--",
                            sys.executable, str(here.parent / "profiler" / "torch_train.py"), "--steps", "60",
                            "--linger", "4"])
    last_scrape, last_scrape_at, scrape_errors = "", None, set()
    while job.poll() is None:  # our own scrapes beside Prometheus's: the text it was given
        time.sleep(0.5)
        try:
            last_scrape = urllib.request.urlopen(f"http://{WRAPPED}/metrics", timeout=2).read().decode()
            last_scrape_at = time.time()
            with urllib.request.urlopen(f"http://{PROM}/api/v1/targets", timeout=2) as r:
                scrape_errors |= {t["lastError"] for t in json.load(r)["data"]["activeTargets"] if t["lastError"]}
        except OSError:
            pass
    if job.returncode != 0:
        sys.exit(f"the wrapped job failed with exit code {job.returncode}")
    (out / "prom_wrapped_last_scrape.txt").write_text(last_scrape)
    print("Prometheus's scrape errors while the jobs ran:", sorted(scrape_errors) or "none", flush=True)
    stats = json.loads(subprocess.run([str(cli), "stats", "--json", str(trace)], check=True,
                                      capture_output=True, text=True).stdout)
    traced = sum(k["count"] for k in stats["kernels"])
    # The series as they stood at our last scrape, in the linger after the last step (a sum of
    # each series' maximum would count twice the kernels that move between top-N series).
    scraped = scalar('sum(cudascope_kernels_total{job="wrapped"})', last_scrape_at)
    samples = scalar('count_over_time(up{job="wrapped"}[10m])')
    check("wrapped job: kernels in Prometheus = kernels in the trace", scraped == traced,
          f"{scraped} vs {traced} over {samples} scrapes")
    phases = {r["metric"].get("range", "?")
              for r in query('max_over_time(cudascope_nvtx_range_duration_seconds_count{job="wrapped"}[10m])')}
    check("wrapped job: NVTX phase histograms", {"forward", "backward", "optimizer"} <= phases, str(sorted(phases)[:8]))

    # 2. A job on cudascope's allocator.
    env = dict(os.environ, CUDASCOPE_METRICS=ALLOCATOR, PYTHONPATH=str(lib) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run([sys.executable, str(here.parent / "torch_allocator" / "train_loop.py"), "--allocator",
                          "cudascope", "--steps", "60", "--linger", "4"], env=env, check=True, capture_output=True,
                         text=True)
    printed = json.loads(run.stdout.strip().splitlines()[-1])["stats"]
    for key, metric in [("allocated_bytes.all.current", "cudascope_memory_allocated_bytes"),
                        ("reserved_bytes.all.current", "cudascope_memory_reserved_bytes"),
                        ("allocated_bytes.all.peak", "cudascope_memory_allocated_peak_bytes"),
                        ("reserved_bytes.all.peak", "cudascope_memory_reserved_peak_bytes")]:
        # The last sample of the job's series: its figures while it lingered.
        got = scalar(f'last_over_time({metric}{{job="allocator",pool="all",device="0"}}[10m])')
        check(f"allocator job: {metric}", got == printed[key], f"Prometheus {got} vs the job's {printed[key]}")
    labels = query('last_over_time(cudascope_memory_allocated_bytes{job="allocator",pool="all"}[10m])')
    check("allocator job: series carry the process's pid", bool(labels) and "pid" in labels[0]["metric"],
          str(labels[0]["metric"] if labels else None))
finally:
    server.terminate()
    server.wait()
sys.exit(1 if failures else 0)
