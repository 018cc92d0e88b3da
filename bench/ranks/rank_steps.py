"""What the rank checks' training scripts share: joining the job's process group on this
rank's GPU, and the timed steps of the loop."""
import os
import time


def join_process_group():
    """torchrun's rank on its local GPU in the NCCL process group; returns (rank, world size)."""
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl")
    return dist.get_rank(), dist.get_world_size()


def run_steps(step, steps, kineto, rank):
    """`steps` calls of step(i), under torch.profiler when `kineto` names the trace to write
    (%r becomes the rank; the first step is the profiler's warm-up). Returns the seconds taken."""
    started = time.perf_counter()
    if kineto:
        from torch.profiler import ProfilerActivity, profile, schedule

        # Written when the one cycle ends: torch.profiler clears a finished cycle's events when
        # the next begins, so exporting after the loop would write the empty next cycle.
        def write(prof):
            prof.export_chrome_trace(kineto.replace("%r", str(rank)))

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=0, warmup=1, active=steps - 1, repeat=1), on_trace_ready=write) as prof:
            for i in range(steps):
                step(i)
                prof.step()
    else:
        for i in range(steps):
            step(i)
    return time.perf_counter() - started
