#!/usr/bin/env python3
"""An independent reader for Chrome/Kineto trace files: Python's own json module and the
trace-event format's rules, checked on every event. It shares no code with cudascope's
writer or its reader, so a trace both accept is a trace Perfetto and chrome://tracing read.

Rules: a `traceEvents` array (or a bare array); every event a JSON object with a known `ph`;
`X` has a name, numeric ts, dur >= 0, pid and tid; `B`/`E` nest per (pid, tid); flow events
(`s`/`t`/`f`) carry an id, and every flow that starts also finishes; `C` has numeric args;
`M` names a process or thread. Prints the counts by `ph` and `cat`; exits 1 naming the first
broken event.

Usage: check_trace_rules.py TRACE.json[.gz] [--min-events N] [--strict-flows]
"""
import argparse
import collections
import gzip
import json
import numbers
import sys

KNOWN_PHASES = set("XBEiIsftCMbneNOD")


def fail(message):
    print(f"check_trace_rules: {message}")
    sys.exit(1)


def check(events, strict_flows):
    open_ranges = collections.defaultdict(list)  # (pid, tid) -> names of open B events
    flows = collections.Counter()  # id -> starts minus finishes
    for index, e in enumerate(events):
        where = f"event {index} ({json.dumps(e)[:120]})"
        if not isinstance(e, dict):
            fail(f"{where}: not a JSON object")
        ph = e.get("ph")
        if ph not in KNOWN_PHASES:
            fail(f"{where}: unknown phase {ph!r}")
        if ph != "M" and not isinstance(e.get("ts"), numbers.Number):
            fail(f"{where}: ts is not a number")
        if ph == "X":
            if not isinstance(e.get("name"), str):
                fail(f"{where}: a complete event without a name")
            if not isinstance(e.get("dur"), numbers.Number) or e["dur"] < 0:
                fail(f"{where}: dur missing or negative")
            if "pid" not in e or "tid" not in e:
                fail(f"{where}: a complete event without pid and tid")
        elif ph == "B":
            open_ranges[(e.get("pid"), e.get("tid"))].append(e.get("name"))
        elif ph == "E":
            stack = open_ranges[(e.get("pid"), e.get("tid"))]
            if not stack:
                fail(f"{where}: an end with no open range on its thread")
            stack.pop()
        elif ph in "stf":
            if "id" not in e and "bind_id" not in e:
                fail(f"{where}: a flow event without an id")
            key = (e.get("cat"), e.get("id", e.get("bind_id")))
            flows[key] += 1 if ph == "s" else (-1 if ph == "f" else 0)
        elif ph == "C":
            args = e.get("args")
            if not isinstance(args, dict) or not args or not all(isinstance(v, numbers.Number) for v in args.values()):
                fail(f"{where}: a counter needs numeric args")
        elif ph == "M":
            if e.get("name") not in ("process_name", "thread_name", "process_sort_index", "thread_sort_index",
                                     "process_labels"):
                fail(f"{where}: unknown metadata {e.get('name')!r}")
    unfinished = [k for k, v in flows.items() if v > 0]
    if unfinished and strict_flows:
        fail(f"{len(unfinished)} flows start and never finish, e.g. {unfinished[0]}")
    return len(unfinished)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--min-events", type=int, default=1)
    ap.add_argument("--strict-flows", action="store_true", help="every flow that starts must finish")
    args = ap.parse_args()
    opener = gzip.open if args.trace.endswith(".gz") else open
    try:
        with opener(args.trace, "rt") as f:
            trace = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{args.trace}: not readable as JSON: {e}")
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        fail(f"{args.trace}: no traceEvents array")
    if len(events) < args.min_events:
        fail(f"{args.trace}: {len(events)} events, expected at least {args.min_events}")
    unfinished = check(events, args.strict_flows)
    by_ph = collections.Counter(e["ph"] for e in events)
    by_cat = collections.Counter(e.get("cat", "") for e in events if e["ph"] == "X")
    print(f"{args.trace}: {len(events)} events follow the rules; by ph {dict(sorted(by_ph.items()))}; "
          f"complete events by cat {dict(sorted(by_cat.items()))}; flows never finished: {unfinished}")


if __name__ == "__main__":
    main()
