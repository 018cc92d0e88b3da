"""A few training steps of a small transformer, with torch.cuda.nvtx ranges per step and
phase. Run plain (under `cudascope run`) or with --torch-profiler OUT.json (torch.profiler
records the same steps). Deterministic shapes, so every step launches the same kernels.
--whole-program makes torch.profiler record the whole script, model set-up included, as
`cudascope run` does, so the two traces hold the same kernels."""
import argparse
import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=5)
parser.add_argument("--warmup", type=int, default=2)
parser.add_argument("--torch-profiler", default=None)
parser.add_argument("--whole-program", action="store_true")
parser.add_argument("--linger", type=float, default=0, help="seconds to wait after the last step (for scrapers)")
args = parser.parse_args()

whole = None
if args.torch_profiler and args.whole_program:
    from torch.profiler import profile, ProfilerActivity
    whole = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    whole.start()

torch.manual_seed(0)
model = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                                         batch_first=True), num_layers=2).cuda()
head = nn.Linear(256, 1000).cuda()
params = list(model.parameters()) + list(head.parameters())
opt = torch.optim.AdamW(params, lr=1e-3, foreach=True)
x = torch.randn(16, 128, 256, device="cuda")
y = torch.randint(0, 1000, (16, 128), device="cuda")
loss_fn = nn.CrossEntropyLoss()


def step(i):
    torch.cuda.nvtx.range_push(f"step {i}")
    torch.cuda.nvtx.range_push("forward")
    logits = head(model(x))
    loss = loss_fn(logits.reshape(-1, 1000), y.reshape(-1))
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("backward")
    loss.backward()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_push("optimizer")
    opt.step()
    opt.zero_grad(set_to_none=True)
    torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()


for i in range(args.warmup):
    step(i)
torch.cuda.synchronize()
if whole is not None:
    for i in range(args.warmup, args.warmup + args.steps):
        step(i)
    whole.stop()
    whole.export_chrome_trace(args.torch_profiler)
elif args.torch_profiler:
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for i in range(args.warmup, args.warmup + args.steps):
            step(i)
    prof.export_chrome_trace(args.torch_profiler)
else:
    for i in range(args.warmup, args.warmup + args.steps):
        step(i)
print("trained", args.steps, "steps", flush=True)
if args.linger:
    import time
    time.sleep(args.linger)
