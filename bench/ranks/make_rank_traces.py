#!/usr/bin/env python3
"""Generates the rank traces of a data-parallel job, for `cudascope stats` at scale.

    make_rank_traces.py OUT_DIR --ranks 256 [--steps 60] [--seed 1]

Each file is a torch.profiler-like trace (Kineto's layout: distributedInfo, ProfilerStep#N
annotations on the host, kernels on the GPU's process, NCCL all-reduces by name) with the
variety of a real job:
  - step counts differ: most ranks record --steps, some fewer (a profiler window that began
    late), rank 0 --rank0-factor (4) times the events per step (the largest trace bounds memory);
  - stragglers: a few ranks compute 1.3-1.8x slower; the others then wait in their
    all-reduces (communication that no compute hides);
  - missing ranks: a few rank numbers of the world have no file;
  - cut-short files: a few files stop mid-event (a killed rank), plain and gzip;
  - a third of the files are gzip.
The same seed gives the same files. Prints one line: files, ranks missing, bytes on disk
and of JSON (before gzip; a cut file counts its whole JSON).
"""
import argparse
import gzip
import json
import os
import random

GPU_PID = 0
HOST_PID = 1000
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
KERNELS = ["ampere_sgemm_128x64_tn", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>",
           "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align4>", "void at::native::reduce_kernel<512, 1>"]


def event(ph, name, cat, pid, tid, ts, dur=None, args=None):
    e = {"ph": ph, "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": round(ts, 3)}
    if dur is not None:
        e["dur"] = round(dur, 3)
    if args:
        e["args"] = args
    return json.dumps(e, separators=(",", ":"))


def rank_events(rank, world, steps, kernels_per_step, slow, rng):
    """The events of one rank, as JSON texts, in time order of their steps."""
    yield event("M", "process_name", "", GPU_PID, 0, 0, args={"name": "GPU %d" % (rank % 8)})
    yield event("M", "process_name", "", HOST_PID, 0, 0, args={"name": "python"})
    t = 1000.0
    for step in range(steps):
        step_start = t
        gpu = t + 20
        host_events = []
        for k in range(kernels_per_step):
            dur = rng.uniform(40, 160) * slow
            name = KERNELS[k % len(KERNELS)]
            host_events.append(event("X", "aten::mm", "cpu_op", HOST_PID, 1, t + k * 2, 1.5))
            host_events.append(event("X", "cudaLaunchKernel", "cuda_runtime", HOST_PID, 1, t + k * 2 + 0.2, 1.0,
                                     {"correlation": step * 100000 + k}))
            yield event("X", name, "kernel", GPU_PID, 7, gpu, dur, {"stream": 7, "correlation": step * 100000 + k,
                                                                    "grid": [128, 1, 1], "block": [256, 1, 1]})
            gpu += dur
        yield from host_events
        # Gradient buckets: three all-reduces under the last fifth of compute, the last one
        # after it. Everyone waits for the slowest rank, so a fast rank's last all-reduce lasts
        # until the straggler's compute ends (exposed communication), a straggler's does not.
        compute_end = gpu
        at = step_start + 20 + (compute_end - step_start - 20) * 0.8
        for b in range(4):
            if b == 3:
                at = max(at, compute_end)
            dur = 300 + ((1.8 - slow) * kernels_per_step * 50 if b == 3 else 0)
            yield event("X", NCCL, "kernel", GPU_PID, 9, at, dur,
                        {"stream": 9, "communication": True, "collective": "AllReduce"})
            at += dur
        bucket_start = at
        yield event("X", "Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", GPU_PID, 8, bucket_start, 25, {"bytes": 4096})
        t = bucket_start + 60
        yield event("X", "ProfilerStep#%d" % step, "user_annotation", HOST_PID, 1, step_start, t - step_start)


def write_rank(path, rank, world, events, cut_at):
    header = '{"schemaVersion":1,"distributedInfo":{"backend":"nccl","rank":%d,"world_size":%d},"traceEvents":[\n' % (
        rank, world)
    text = header + ",\n".join(events) + "\n]}\n"
    data = text.encode()
    json_bytes = len(data)
    if path.endswith(".gz"):
        data = gzip.compress(data, compresslevel=1)
    if cut_at is not None:
        data = data[: int(len(data) * cut_at)]
    with open(path, "wb") as f:
        f.write(data)
    return len(data), json_bytes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--kernels", type=int, default=60, help="compute kernels per step of an ordinary rank")
    parser.add_argument("--rank0-factor", type=int, default=4, help="rank 0's kernels per step, times --kernels")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    os.makedirs(options.out_dir, exist_ok=True)
    world = options.ranks
    missing = set(rng.sample(range(1, world), max(1, world // 50)))
    stragglers = set(rng.sample(range(world), max(1, world // 32)))
    cut = set(rng.sample(range(1, world), max(1, world // 32)))
    total = json_total = files = 0
    for rank in range(world):
        if rank in missing:
            continue
        steps = options.steps if rng.random() > 0.15 else rng.randint(options.steps // 2, options.steps - 1)
        kernels = options.kernels * (options.rank0_factor if rank == 0 else 1)
        slow = rng.uniform(1.3, 1.8) if rank in stragglers else rng.uniform(0.97, 1.03)
        name = "trace_%d.json%s" % (rank, ".gz" if rank % 3 == 1 else "")
        events = rank_events(rank, world, steps, kernels, slow, rng)
        on_disk, json_bytes = write_rank(os.path.join(options.out_dir, name), rank, world, events,
                                         rng.uniform(0.6, 0.95) if rank in cut else None)
        total += on_disk
        json_total += json_bytes
        files += 1
    print("%d files, %d ranks missing, %d stragglers, %d cut short, %d bytes on disk, %d bytes of JSON" % (
        files, len(missing), len(stragglers - missing), len(cut - missing), total, json_total))


if __name__ == "__main__":
    main()
