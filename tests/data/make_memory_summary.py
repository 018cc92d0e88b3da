#!/usr/bin/env python3
"""Writes PyTorch's torch.cuda.memory_stats() and memory_summary() taken at the same moment,
the reference pair for cudascope's summary formatting test (format_memory_summary of these
stats must print exactly this text) and its key-set test.

Run on a machine with a GPU and PyTorch:
    python3 tests/data/make_memory_summary.py OUT_DIR
Writes OUT_DIR/torch_memory_stats.json and OUT_DIR/torch_memory_summary.txt.
"""
import json
import os
import sys

import torch


def workload():
    """A few allocations of both pools, frees, a cache flush and an OOM retry-free run, so
    that most rows of the summary are non-zero."""
    torch.manual_seed(0)
    keep = [torch.empty(int(n), dtype=torch.uint8, device="cuda")
            for n in torch.randint(512, 4 << 20, (64,))]
    big = torch.empty(300 << 20, dtype=torch.uint8, device="cuda")
    del keep[::2]
    del big
    torch.cuda.empty_cache()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        keep.append(torch.empty(12 << 20, dtype=torch.uint8, device="cuda"))
    torch.cuda.synchronize()
    return keep


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    held = workload()
    stats = torch.cuda.memory_stats()
    summary = torch.cuda.memory_summary()
    with open(os.path.join(out, "torch_memory_stats.json"), "w") as f:
        json.dump(dict(stats), f, indent=1, sort_keys=True)
        f.write("\n")
    with open(os.path.join(out, "torch_memory_summary.txt"), "w") as f:
        f.write(summary)
    print(len(stats), "keys;", len(held), "tensors held")


if __name__ == "__main__":
    main()
