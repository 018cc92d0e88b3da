#!/usr/bin/env python3
"""Compares a JSON object a command printed with the expected one (plain or .gz).

  compare_stats.py ACTUAL EXPECTED          every key of EXPECTED, equal in ACTUAL, and no other
  compare_stats.py ACTUAL EXPECTED --common the keys both hold (at least MIN_COMMON), equal

Prints the differing keys and exits 1 when they differ.
"""
import gzip
import json
import math
import sys

MIN_COMMON = 10


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-9)
    return a == b


def main():
    actual, expected = load(sys.argv[1]), load(sys.argv[2])
    common_only = "--common" in sys.argv[3:]
    keys = set(expected) & set(actual) if common_only else set(expected) | set(actual)
    if common_only and len(keys) < MIN_COMMON:
        print(f"only {len(keys)} keys in common: {sorted(keys)}")
        return 1
    wrong = [k for k in sorted(keys) if not same(actual.get(k), expected.get(k))]
    for k in wrong[:20]:
        print(f"{k}: got {actual.get(k)!r}, expected {expected.get(k)!r}")
    if wrong:
        print(f"{len(wrong)} of {len(keys)} keys differ ({sys.argv[1]} vs {sys.argv[2]})")
        return 1
    print(f"{len(keys)} keys equal ({sys.argv[1]} vs {sys.argv[2]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
