#!/usr/bin/env python3
"""PyTorch's caching allocator through a CUDA graph capture, replay and reset, against
cudascope's (graph_pool_dump): the same allocations (a static input, then inside
torch.cuda.graph: tensors kept, freed during the capture and reused) and memory_stats()
compared key by key at each stage. Exit status 1 when any key differs.

  python3 graph_pool_check.py --graph-pool-dump BUILD/graph_pool_dump
"""
import argparse
import json
import subprocess
import sys

import torch

KiB, MiB = 1024, 1024 * 1024


def bytes_(n):
    return torch.empty(n, dtype=torch.uint8, device="cuda")


def torch_stages():
    stages = {}
    static = bytes_(1 * MiB)  # noqa: F841  (held throughout, as the C++ side's input)
    stages["before_capture"] = dict(torch.cuda.memory_stats())
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        a = bytes_(3 * MiB)
        b = bytes_(512 * KiB)
        c = bytes_(25 * MiB)
        a.fill_(1)
        del b
        d = bytes_(256 * KiB)
        e = bytes_(24 * MiB)
        del c
        out = bytes_(4 * MiB)
        out.fill_(2)
    stages["after_capture"] = dict(torch.cuda.memory_stats())
    g.replay()
    torch.cuda.synchronize()
    stages["after_replay"] = dict(torch.cuda.memory_stats())
    del a, d, e, out
    stages["outputs_dropped"] = dict(torch.cuda.memory_stats())
    g.reset()
    torch.cuda.empty_cache()
    stages["after_reset_and_empty_cache"] = dict(torch.cuda.memory_stats())
    return stages


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--graph-pool-dump", required=True)
    args = parser.parse_args()
    ours = json.loads(subprocess.run([args.graph_pool_dump], check=True, capture_output=True, text=True).stdout)
    theirs = torch_stages()
    print(f"device {torch.cuda.get_device_name()}, torch {torch.__version__}")
    differ = 0
    for stage, expected in theirs.items():
        got = ours[stage]
        keys = sorted(set(expected) | set(got))
        bad = [k for k in keys if expected.get(k) != got.get(k)]
        differ += len(bad)
        print(f"{stage:30} {len(keys) - len(bad)}/{len(keys)} keys equal"
              + (": " + ", ".join(f"{k} torch={expected.get(k)} ours={got.get(k)}" for k in bad[:12]) if bad else ""))
        print(f"{'':30} reserved {expected.get('reserved_bytes.all.current')} allocated "
              f"{expected.get('allocated_bytes.all.current')} segments {expected.get('segment.all.current')}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
