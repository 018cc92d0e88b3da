#!/usr/bin/env python3
"""Checks that PyTorch's own tools read a snapshot pickle cudascope wrote:
pickle.load, then torch.cuda._memory_viz's views of a snapshot (segments, memory,
segment_plot, trace_plot). The flame-graph views get the folded stacks themselves rather
than a rendering, which would download flamegraph.pl.
Usage: python3 allocator_torch_pickle_check.py SNAPSHOT.pickle"""
import pickle
import sys

import torch.cuda._memory_viz as viz

with open(sys.argv[1], "rb") as f:
    snapshot = pickle.load(f)
print("pickle.load: ok,", len(snapshot["segments"]), "segments,",
      sum(len(t) for t in snapshot["device_traces"]), "trace entries")
failed = 0
folded = {"format_flamegraph": lambda stacks: stacks}
for name, kwargs in (("segments", folded), ("memory", folded), ("segment_plot", {}), ("trace_plot", {})):
    fn = getattr(viz, name, None)
    if fn is None:
        print(f"_memory_viz.{name}: not in this PyTorch")
        continue
    try:
        out = fn(snapshot, **kwargs)
        print(f"_memory_viz.{name}: ok ({len(out)} characters)")
    except Exception as e:  # report every view, then fail
        failed += 1
        print(f"_memory_viz.{name}: FAILED: {type(e).__name__}: {e}")
sys.exit(1 if failed else 0)
