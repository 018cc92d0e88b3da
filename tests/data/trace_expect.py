#!/usr/bin/env python3
"""Counts in a Chrome/Kineto trace computed with Python's own json module, as the
independent reference the trace reader's tests compare against: events by `cat`, kernels
by name, ac2g flow events, device properties.

Usage: trace_expect.py TRACE.json[.gz] > TRACE.expect.json   (standard library only)
"""
import collections
import gzip
import json
import sys


def expected_figures(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    complete = [e for e in events if e.get("ph") == "X"]
    by_cat = collections.Counter(e.get("cat", "") for e in complete)
    kernels = collections.Counter(e["name"] for e in complete if e.get("cat") == "kernel")
    kernel_us = sum(e.get("dur", 0) for e in complete if e.get("cat") == "kernel")
    flows = sum(1 for e in events if e.get("cat") == "ac2g" and e.get("ph") in ("s", "f"))
    return {"events": len(events), "complete_events_by_cat": dict(sorted(by_cat.items())),
            "kernels_by_name": dict(sorted(kernels.items())), "kernel_count": sum(kernels.values()),
            "kernel_total_us": kernel_us, "ac2g_flow_events": flows,
            "device_properties": len(trace.get("deviceProperties", [])) if isinstance(trace, dict) else 0}


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    json.dump(expected_figures(sys.argv[1]), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
