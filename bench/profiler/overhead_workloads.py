"""The two PyTorch loops run_overhead_bench.py times, in one process, each timed inside the
script (start-up, model building and warm-up excluded):

  mlp          launch-bound: a 6-layer MLP trained with Adam, small enough that the host's
               launches, not the GPU, set the pace (about 60 kernels a step)
  transformer  compute-bound: a transformer encoder training step (TF32 matmuls), the GPU
               busy throughout

Prints one line: OVERHEAD_BENCH {"mlp_seconds": ..., "transformer_seconds": ..., "mlp_cpu_seconds": ...,
"transformer_cpu_seconds": ...} (wall seconds, and the process's CPU seconds over the same loop).
--torch-profiler cuda|cpu,cuda records both timed loops with torch.profiler (started before
the clock starts; the process ends once the timing is printed, without processing the
profiler's events, which is not timed either way, as cudascope's trace writing at exit is not).
--scrape-port P --scrape-out FILE: after the loops, waits for the recording's periodic flush
to deliver the last kernel records, then saves this process's live metrics (served by the
cudascope injection library on 127.0.0.1:P) to FILE.
--windows S [--loop mlp|transformer] (run_window_overhead.py): one loop alone (the MLP's by
default) for S seconds in short blocks of steps; prints OVERHEAD_BLOCKS [[begin_ns, end_ns,
cpu_ns, steps], ...] on CLOCK_MONOTONIC, the clock of a sampled recording's switch log
(window_phases.py).
--paired D [--paired-duration T] [--paired-phase S] [--loop mlp|transformer]
(run_paired_overhead.py): one loop alone (the MLP's by default), in blocks of steps, around a recording that starts D seconds after CUDA's start and
stops T seconds later (`cudascope run --delay D --duration T`); prints OVERHEAD_PHASES
{"before": {"steps", "seconds", "cpu_seconds"}, "recorded": {...}, "after": {...}, "warm_s": W}:
the blocks before the recording, of S seconds of it, of S seconds after it, and when the loop
was ready (paired_phases.py; no "after" without T)."""
import argparse
import json
import os
import sys
import time
import urllib.request

import torch
import torch.nn as nn

from paired_phases import paired_phases
from window_phases import run_blocks

parser = argparse.ArgumentParser()
parser.add_argument("--mlp-steps", type=int, default=1500)
parser.add_argument("--transformer-steps", type=int, default=30)
parser.add_argument("--torch-profiler", choices=["cuda", "cpu,cuda"], default=None)
parser.add_argument("--scrape-port", type=int, default=0)
parser.add_argument("--scrape-out", default=None)
parser.add_argument("--paired", type=float, default=None, metavar="D")
parser.add_argument("--paired-duration", type=float, default=None, metavar="T")
parser.add_argument("--paired-phase", type=float, default=6.0, metavar="S")
parser.add_argument("--windows", type=float, default=None, metavar="S")
parser.add_argument("--loop", choices=["mlp", "transformer"], default="mlp")
args = parser.parse_args()

# The CUDA driver loads the injection library, and its --delay clock starts, in cuInit, which
# this first CUDA call makes: the recording starts at most D seconds after cuda_ready.
torch.cuda.init()
cuda_ready = time.perf_counter()

torch.manual_seed(0)
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True
device = "cuda"


def mlp_workload():
    layers = []
    for _ in range(6):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(256, 10)).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(64, 256, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def transformer_workload():
    layer = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096, batch_first=True)
    model = nn.TransformerEncoder(layer, num_layers=6).to(device)
    head = nn.Linear(1024, 1000).to(device)
    params = list(model.parameters()) + list(head.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4)
    x = torch.randn(16, 512, 1024, device=device)
    y = torch.randint(0, 1000, (16, 512), device=device)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        logits = head(model(x))
        loss = loss_fn(logits.reshape(-1, 1000), y.reshape(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def timed(step, steps):
    """Wall seconds and the process's CPU seconds (every thread: the launching ones, autograd's,
    and a recorder's own) for `steps` steps."""
    torch.cuda.synchronize()
    start, cpu_start = time.perf_counter(), time.process_time()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return time.perf_counter() - start, time.process_time() - cpu_start


# --paired's and --windows' loops: warm-up steps, and steps per timed block of each (the
# transformer's step is about a hundred times the MLP's; a window's blocks must be a few
# hundredths of its half second).
LOOPS = {"mlp": (mlp_workload, 20, 50, 10), "transformer": (transformer_workload, 2, 2, 1)}
if args.paired is not None or args.windows is not None:
    make, warm_up, paired_block_steps, window_block_steps = LOOPS[args.loop]
    one_step = make()
    for _ in range(warm_up):
        one_step()
    if args.windows is not None:
        blocks = run_blocks(one_step, torch.cuda.synchronize, args.windows, window_block_steps)
        print("OVERHEAD_BLOCKS " + json.dumps(blocks), flush=True)
        sys.exit(0)
    phases = paired_phases(one_step, torch.cuda.synchronize, cuda_ready, args.paired, args.paired_duration,
                           args.paired_phase, block_steps=paired_block_steps)
    print("OVERHEAD_PHASES " + json.dumps(phases), flush=True)
    sys.exit(0)
mlp_step = mlp_workload()
transformer_step = transformer_workload()
for _ in range(20):
    mlp_step()
for _ in range(2):
    transformer_step()
torch.cuda.synchronize()

profiler = None
if args.torch_profiler:
    from torch.profiler import ProfilerActivity, profile
    activities = [ProfilerActivity.CUDA]
    if args.torch_profiler == "cpu,cuda":
        activities.insert(0, ProfilerActivity.CPU)
    profiler = profile(activities=activities)
    profiler.__enter__()
mlp_seconds, mlp_cpu_seconds = timed(mlp_step, args.mlp_steps)
transformer_seconds, transformer_cpu_seconds = timed(transformer_step, args.transformer_steps)
result = "OVERHEAD_BENCH " + json.dumps({"mlp_seconds": mlp_seconds, "transformer_seconds": transformer_seconds,
                                         "mlp_cpu_seconds": mlp_cpu_seconds,
                                         "transformer_cpu_seconds": transformer_cpu_seconds})
if profiler is not None:
    # Only the timing is wanted: turning the events into torch.profiler's tables would take
    # longer than the loops (and is not timed either way), so the process ends here.
    print(result, flush=True)
    os._exit(0)

if args.scrape_port and args.scrape_out:
    time.sleep(1.0)  # the session flushes every 200 ms; CUPTI's last buffers go out with it
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{args.scrape_port}/metrics", timeout=10) as reply:
            text = reply.read().decode("utf-8", "replace")
        with open(args.scrape_out, "w") as out:
            out.write(text)
    except OSError as e:
        print(f"overhead_workloads: no scrape of port {args.scrape_port}: {e}", file=sys.stderr)

print(result, flush=True)
