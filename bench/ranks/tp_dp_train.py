"""Tensor- and data-parallel training over NCCL on four GPUs, for run_tp_dp_check.sh.

Four ranks form tensor-parallel (TP) pairs {0,1},{2,3} and data-parallel (DP) pairs {0,2},{1,3}
(dist.new_group for each; every rank creates all four, in the same order, as PyTorch requires).
Each step: a Megatron-style MLP whose first linear is split by columns and second by rows over
the TP pair (an all-reduce of the activations forward and of their gradient backward), then one
all-reduce of the flattened gradients over the DP pair. The TP pair {2,3} also broadcasts its
batch from its first rank each step (a loader feeding one rank of the pair), so the k-th
collective of rank 0 and of rank 2 are different operations: only pairing by process group
and sequence number matches them right. Last, each DP pair swaps its losses with
batch_isend_irecv: NCCL calls grouped (ncclGroupStart, ncclSend, ncclRecv, ncclGroupEnd), whose
kernel is launched in ncclGroupEnd, the one range of the group that names no communicator
itself.

Each step is an NVTX range "step N"; with --kineto PATTERN each rank also records a
torch.profiler trace (ProfilerStep#N, record_param_comms with the process group and "Seq"),
PATTERN's %r replaced by the rank.
"""
import argparse

import torch
import torch.distributed as dist

from rank_steps import join_process_group, run_steps

TP_PAIRS = ([0, 1], [2, 3])
DP_PAIRS = ([0, 2], [1, 3])


def new_group(ranks, desc):
    try:
        return dist.new_group(ranks, group_desc=desc)
    except TypeError:  # releases before group_desc
        return dist.new_group(ranks)


def swap_with_peer(t, peer, group):
    """Sends `t` to rank `peer` and returns what the peer sent: one grouped send and receive."""
    got = torch.empty_like(t)
    ops = [dist.P2POp(dist.isend, t, peer, group), dist.P2POp(dist.irecv, got, peer, group)]
    for request in dist.batch_isend_irecv(ops):
        request.wait()
    return got


class CopyToTensorParallel(torch.autograd.Function):
    """Identity forward; all-reduce of the gradient over the TP group backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous()
        dist.all_reduce(grad, group=ctx.group)
        return grad, None


class ReduceFromTensorParallel(torch.autograd.Function):
    """All-reduce over the TP group forward; identity backward."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class TensorParallelMLP(torch.nn.Module):
    def __init__(self, width, tp_size, tp_group):
        super().__init__()
        self.group = tp_group
        self.up = torch.nn.Linear(width, 4 * width // tp_size)    # split by columns
        # Split by rows; no bias, which the TP all-reduce would add once per shard.
        self.down = torch.nn.Linear(4 * width // tp_size, width, bias=False)

    def forward(self, x):
        x = CopyToTensorParallel.apply(x, self.group)
        return ReduceFromTensorParallel.apply(self.down(torch.relu(self.up(x))), self.group)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--width", type=int, default=2048)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--kineto", default="", help="torch.profiler trace per rank, e.g. out/kineto_%%r.json")
    args = p.parse_args()

    rank, world = join_process_group()
    if world != 4:
        raise SystemExit(f"tp_dp_train.py needs 4 ranks (torchrun --nproc-per-node 4), got {world}")
    # Every rank creates every group, in one order: the groups' names ("1".."4") agree across ranks.
    tp_groups = [new_group(r, "tp") for r in TP_PAIRS]
    dp_groups = [new_group(r, "dp") for r in DP_PAIRS]
    tp_index, dp_index = rank // 2, rank % 2
    tp, dp = tp_groups[tp_index], dp_groups[dp_index]
    dp_peer = DP_PAIRS[dp_index][1 - rank // 2]

    shard = rank % 2  # the rank's shard within its TP pair; DP pairs join equal shards
    torch.manual_seed(1234 + shard)  # a pair's two shards differ, DP replicas start equal
    model = torch.nn.Sequential(*[TensorParallelMLP(args.width, 2, tp) for _ in range(args.layers)]).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(args.batch, args.width, device="cuda")

    def step(i):
        torch.cuda.nvtx.range_push(f"step {i}")
        if tp_index == 1:  # the pair {2,3}: its first rank's batch goes to both
            dist.broadcast(x, src=TP_PAIRS[1][0], group=tp)
        loss = model(x).square().mean()
        loss.backward()
        grads = [p.grad for p in model.parameters()]
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, group=dp)
        flat /= 2
        offset = 0
        for g in grads:
            g.copy_(flat[offset:offset + g.numel()].view_as(g))
            offset += g.numel()
        opt.step()
        opt.zero_grad(set_to_none=True)
        pair_loss = (loss.detach() + swap_with_peer(loss.detach().reshape(1), dp_peer, dp)) / 2  # noqa: F841
        torch.cuda.synchronize()
        torch.cuda.nvtx.range_pop()

    for i in range(2):  # warm-up: NCCL communicators of both groups, cuBLAS handles
        step(-1 - i)
    elapsed = run_steps(step, args.steps, args.kineto, rank)
    print(f"rank {rank} (tp {TP_PAIRS[tp_index]}, dp {DP_PAIRS[dp_index]}): {args.steps} steps in "
          f"{elapsed * 1e3:.1f} ms", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
