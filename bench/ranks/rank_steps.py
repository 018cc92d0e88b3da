"""The timed steps of a rank's training loop, shared by the rank checks' training scripts:
`steps` calls of step(i), under torch.profiler when `kineto` names the trace to write (%r
becomes the rank; the first step is the profiler's warm-up). Returns the seconds they took."""
import time


def run_steps(step, steps, kineto, rank):
    started = time.perf_counter()
    if kineto:
        from torch.profiler import ProfilerActivity, profile, schedule

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                     schedule=schedule(wait=0, warmup=1, active=steps - 1)) as prof:
            for i in range(steps):
                step(i)
                prof.step()
        prof.export_chrome_trace(kineto.replace("%r", str(rank)))
    else:
        for i in range(steps):
            step(i)
    return time.perf_counter() - started
