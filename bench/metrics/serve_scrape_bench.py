#!/usr/bin/env python3
"""Times scrapes of a running `cudascope serve`, as Prometheus makes them (a new connection,
GET /metrics, read to the end), and checks them against the budget (5 ms per scrape).

Usage: serve_scrape_bench.py CUDASCOPE [--scrapes N] [--budget-ms MS] [--json OUT]
                             [-- SERVE_FLAGS...]
Starts `CUDASCOPE serve --bind 127.0.0.1:0 SERVE_FLAGS`, reads the port it prints, makes 20
warm-up scrapes, then N timed ones (default 200), and prints min/median/p99/max in ms, the
exposition's size and series count. Exit status 1 when the median is over the budget.
On a machine without a GPU, run it with CUDASCOPE_BACKEND=sim: it then times the path
without NVML (formatting and HTTP)."""
import argparse
import http.client
import json
import re
import statistics
import subprocess
import sys
import time


def scrape(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    start = time.perf_counter()
    connection.request("GET", "/metrics")
    body = connection.getresponse().read()
    elapsed = time.perf_counter() - start
    connection.close()
    return elapsed, body


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cudascope")
    parser.add_argument("--scrapes", type=int, default=200)
    parser.add_argument("--budget-ms", type=float, default=5.0)
    parser.add_argument("--json", help="also write the figures to this file")
    # Everything after "--" goes to serve as it is (argparse would take "--flag" for its own).
    argv = sys.argv[1:]
    serve_flags = argv[argv.index("--") + 1:] if "--" in argv else []
    args = parser.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    args.serve_flags = serve_flags

    server = subprocess.Popen([args.cudascope, "serve", "--bind", "127.0.0.1:0", *args.serve_flags],
                              stderr=subprocess.PIPE, text=True)
    try:
        port = None
        for line in server.stderr:
            sys.stderr.write(line)
            found = re.search(r"\(port (\d+)\)", line)
            if found:
                port = int(found.group(1))
                break
        if port is None:
            print(f"serve exited ({server.wait()}) before it listened", file=sys.stderr)
            return 2
        for _ in range(20):
            scrape(port)
        times, body = [], b""
        for _ in range(args.scrapes):
            elapsed, body = scrape(port)
            times.append(elapsed * 1e3)
    finally:
        server.terminate()
        server.wait()

    times.sort()
    series = sum(1 for line in body.decode().splitlines() if line and not line.startswith("#"))
    figures = {
        "serve_flags": args.serve_flags,
        "scrapes": len(times),
        "min_ms": times[0],
        "median_ms": statistics.median(times),
        "p99_ms": times[min(len(times) - 1, int(len(times) * 0.99))],
        "max_ms": times[-1],
        "bytes": len(body),
        "series": series,
        "budget_ms": args.budget_ms,
    }
    print("serve %s: %d scrapes, ms min %.3f median %.3f p99 %.3f max %.3f; %d bytes, %d series" % (
        " ".join(args.serve_flags) or "(defaults)", figures["scrapes"], figures["min_ms"], figures["median_ms"],
        figures["p99_ms"], figures["max_ms"], figures["bytes"], series))
    within = figures["median_ms"] <= args.budget_ms
    print(("within" if within else "OVER") + " the budget of %.1f ms per scrape (median)" % args.budget_ms)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
