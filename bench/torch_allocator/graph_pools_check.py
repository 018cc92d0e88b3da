#!/usr/bin/env python3
"""CUDA graphs under cudascope's allocator in PyTorch, against PyTorch's own allocator: a small
MLP's forward captured with torch.cuda.graph (warm-up on a side stream first, as PyTorch's
documentation does), replayed on new inputs. Each allocator runs in its own process; the
replayed outputs must equal eager ones bit for bit, and memory_stats() at each stage
(after warm-up, after capture, after three replays, after reset and empty_cache) must be the
same under both allocators. Exit status 1 on any difference.

  python3 graph_pools_check.py            (the driver: runs both and compares)
  python3 graph_pools_check.py --allocator cudascope|pytorch   (one run; prints JSON)
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import memory_stats, use_allocator  # noqa: E402


def one_run(allocator):
    import torch
    use_allocator(allocator)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 512)).cuda()
    static_in = torch.randn(64, 512, device="cuda")
    stages = {}
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(static_in)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    stages["after_warmup"] = dict(memory_stats(allocator))
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph), torch.no_grad():
        static_out = model(static_in)
    stages["after_capture"] = dict(memory_stats(allocator))
    equal = True
    for seed in (1, 2, 3):
        torch.manual_seed(seed)
        static_in.copy_(torch.randn(64, 512, device="cuda"))
        graph.replay()
        with torch.no_grad():
            equal &= bool(torch.equal(static_out, model(static_in)))
    torch.cuda.synchronize()
    stages["after_replays"] = dict(memory_stats(allocator))
    del static_out
    graph.reset()
    torch.cuda.empty_cache()
    stages["after_reset"] = dict(memory_stats(allocator))
    return {"allocator": allocator, "replay_equals_eager": equal, "stages": stages,
            "device": torch.cuda.get_device_name(), "torch": torch.__version__}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--allocator", choices=["pytorch", "cudascope"])
    args = parser.parse_args()
    if args.allocator:
        print(json.dumps(one_run(args.allocator)))
        return 0
    runs = {}
    for allocator in ("pytorch", "cudascope"):
        out = subprocess.run([sys.executable, __file__, "--allocator", allocator], capture_output=True, text=True)
        if out.returncode != 0:
            print(f"{allocator}: failed:\n{out.stderr[-3000:]}")
            return 1
        runs[allocator] = json.loads(out.stdout.strip().splitlines()[-1])
    theirs, ours = runs["pytorch"], runs["cudascope"]
    print(f"device {ours['device']}, torch {ours['torch']}")
    failed = not (ours["replay_equals_eager"] and theirs["replay_equals_eager"])
    print(f"replays equal eager: cudascope {ours['replay_equals_eager']}, pytorch {theirs['replay_equals_eager']}")
    for stage, expected in theirs["stages"].items():
        got = ours["stages"][stage]
        keys = sorted(set(expected) | set(got))
        bad = [k for k in keys if expected.get(k) != got.get(k)]
        failed |= bool(bad)
        print(f"{stage:15} {len(keys) - len(bad)}/{len(keys)} keys equal; reserved {got.get('reserved_bytes.all.current')}"
              + ("" if not bad else ": " + ", ".join(f"{k} torch={expected.get(k)} ours={got.get(k)}" for k in bad[:8])))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
