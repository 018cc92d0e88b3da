#!/usr/bin/env python3
"""Writes torch.profiler (Kineto) traces of a small training loop, the reference files for
the trace reader's tests, with the figures Python computes from the same file beside each.

Run on a machine with a GPU and PyTorch:
    python3 tests/data/make_kineto_trace.py OUT_DIR [--steps 3] [--seed 0]
Writes OUT_DIR/kineto_train.json.gz and OUT_DIR/kineto_train.expect.json (event counts by
cat and kernel counts by name, computed with Python's json module from that trace).
"""
import argparse
import gzip
import json
import os

import torch

from trace_expect import expected_figures


def train_steps(steps, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512),
        torch.nn.Linear(512, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device="cuda")
    y = torch.randint(0, 10, (64,), device="cuda")
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities, record_shapes=True, with_stack=False) as prof:
        for step in range(steps):
            with torch.profiler.record_function(f"step_{step}"):
                with torch.cuda.nvtx.range("forward"):
                    loss = torch.nn.functional.cross_entropy(model(x), y)
                with torch.cuda.nvtx.range("backward"):
                    loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
                host = x.cpu()  # a device-to-host copy
                x.copy_(host.cuda(non_blocking=True))
            prof.step()
        torch.cuda.synchronize()
    return prof


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    prof = train_steps(args.steps, args.seed)
    path = os.path.join(args.out_dir, "kineto_train.json")
    prof.export_chrome_trace(path)
    with open(path, "rb") as src, gzip.open(path + ".gz", "wb") as dst:
        dst.write(src.read())
    os.remove(path)
    with open(os.path.join(args.out_dir, "kineto_train.expect.json"), "w") as f:
        json.dump(expected_figures(path + ".gz"), f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
