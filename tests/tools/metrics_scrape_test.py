#!/usr/bin/env python3
"""bench/journeys/metrics_scrape_check.py --trace on the sim backend, as journey 2 runs it on a
GPU: a job under `cudascope run --metrics ADDR -o T` is scraped while it runs, and the last
scrape's kernels and host waits must equal the trace's kernels and synchronize calls. A trace
taken with CUPTI's synchronisation records besides (`--activities default,sync`) has its waits
counted from those records instead, once each, so the check passes there too; a scrape that
counted each wait twice would fail it.

  metrics_scrape_test.py CLI"""
import os
import subprocess
import sys
import tempfile

from check_support import expect
from sampling_stress_check import free_ports

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "..", "bench", "journeys", "metrics_scrape_check.py")


def check(cli, trace, *activities):
    addr = f"127.0.0.1:{free_ports(1)[0]}"
    job = [cli, "run", "--metrics", addr, "-o", trace, *activities, "--",
           cli, "demo", "--iterations", "20", "--kernel-ms", "0.1", "--hold", "1.5"]
    return subprocess.run([sys.executable, CHECK, "--addr", addr, "--interval", "0.2", "--trace", trace,
                           "--cudascope", cli, "--", *job],
                          env=dict(os.environ, CUDASCOPE_BACKEND="sim"), capture_output=True, text=True, timeout=120)


def main():
    cli = sys.argv[1]
    with tempfile.TemporaryDirectory() as out:
        default = check(cli, os.path.join(out, "default.json"))
        expect(default.returncode == 0, "a default trace's metrics agree with it", default)
        expect("host waits: last scrape 0," not in default.stdout and "host waits: last scrape" in default.stdout,
               "the demo's waits are counted from its synchronize calls", default)
        with_sync = check(cli, os.path.join(out, "with_sync.json"), "--activities", "default,sync")
        expect(with_sync.returncode == 0, "with synchronisation records, each wait is counted once", with_sync)
    print("PASS")


if __name__ == "__main__":
    main()
