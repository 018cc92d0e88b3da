#!/usr/bin/env python3
"""Compares the kernel tables `cudascope stats --json` printed for two traces of the same
program (ours and torch.profiler's): kernel count by name. Exit 1 when they differ.
Usage: compare_stats.py OURS.stats.json THEIRS.stats.json"""
import json
import sys


def kernels(path):
    with open(path) as f:
        return {row["name"]: row["count"] for row in json.load(f)["kernels"]}


ours, theirs = kernels(sys.argv[1]), kernels(sys.argv[2])
print(f"kernels: ours {sum(ours.values())} in {len(ours)} names; torch.profiler {sum(theirs.values())} in {len(theirs)} names")
differ = sorted(set(ours) | set(theirs), key=lambda n: -(ours.get(n, 0) + theirs.get(n, 0)))
bad = [n for n in differ if ours.get(n, 0) != theirs.get(n, 0)]
for name in bad[:15]:
    print(f"  differs: ours {ours.get(name, 0)} torch {theirs.get(name, 0)}  {name[:140]}")
print("SAME KERNEL COUNTS" if not bad else f"{len(bad)} NAMES DIFFER")
sys.exit(1 if bad else 0)
