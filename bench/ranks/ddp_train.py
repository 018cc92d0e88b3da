"""A small DDP training loop over NCCL for the multi-rank check (run_ddp_check.sh).

Each step is an NVTX range "step N" (what cudascope's rank summary finds as a step); with
--kineto PATTERN each rank also records a torch.profiler trace (ProfilerStep#N) for comparison,
PATTERN's %r replaced by the rank. --slow-rank R adds --slow-ms of extra matmuls on rank R
before backward, so the others wait in the all-reduce: their exposed communication grows.
"""
import argparse
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

from rank_steps import join_process_group, run_steps


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--width", type=int, default=4096)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--slow-rank", type=int, default=-1)
    p.add_argument("--slow-ms", type=float, default=5.0)
    p.add_argument("--kineto", default="", help="torch.profiler trace per rank, e.g. out/kineto_%%r.json")
    args = p.parse_args()

    rank, _ = join_process_group()
    layers = []
    for _ in range(args.layers):
        layers += [torch.nn.Linear(args.width, args.width), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers).cuda(), device_ids=[torch.cuda.current_device()])
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, args.width, device="cuda")
    filler = torch.randn(2048, 2048, device="cuda")

    def step(i):
        torch.cuda.nvtx.range_push(f"step {i}")
        out = model(x)
        if rank == args.slow_rank:
            end = time.perf_counter() + args.slow_ms / 1e3
            while time.perf_counter() < end:
                filler @ filler
        out.square().mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()

    for i in range(3):  # warm-up: NCCL communicators, cuBLAS handles
        step(-1 - i)
    elapsed = run_steps(step, args.steps, args.kineto, rank)
    print(f"rank {rank}: {args.steps} steps in {elapsed * 1e3:.1f} ms ({elapsed / args.steps * 1e3:.2f} ms/step)", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
