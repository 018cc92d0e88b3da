"""The launch-bound loop in PyTorch: 20,000 tiny in-place adds. --torch-profiler records it
with torch.profiler (CPU+CUDA), the peer cudascope run is compared against. Prints seconds."""
import sys
import time
import torch

n = 20000
use_profiler = "--torch-profiler" in sys.argv
x = torch.zeros(1, device="cuda")
for _ in range(2000):
    x.add_(1)
torch.cuda.synchronize()


def loop():
    start = time.perf_counter()
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
    return time.perf_counter() - start


for repetition in range(5):
    if use_profiler:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            seconds = loop()
    else:
        seconds = loop()
    print(f"{{\"launches\":{n},\"seconds\":{seconds:.6f}}}", flush=True)
