"""A small transformer language model trained for --steps steps (forward, backward, AdamW),
deterministic (fixed seeds, deterministic algorithms, no TF32), under PyTorch's allocator or
cudascope's. Prints one JSON line: every loss as float32 bits, the peaks and counters of the
allocator, and the loop's wall time. The allocator's configuration is PYTORCH_CUDA_ALLOC_CONF
(both allocators read it).

  python3 train_loop.py --allocator cudascope [--steps 200] [--snapshot S.pickle.gz] [--metrics-out M.txt]
"""

import argparse
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import conf, memory_stats, use_allocator  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--allocator", required=True, choices=["pytorch", "cudascope"])
parser.add_argument("--steps", type=int, default=200)
parser.add_argument("--snapshot", help="cudascope only: record history and write the snapshot here")
parser.add_argument("--metrics-out", help="cudascope only: scrape CUDASCOPE_METRICS mid-run into this file")
parser.add_argument("--linger", type=float, default=0,
                    help="seconds to wait after printing the result, the model still held (for scrapers)")
args = parser.parse_args()

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

use_allocator(args.allocator)
if args.snapshot:
    import cudascope_torch
    cudascope_torch.record_memory_history("all", "all", "python", 300000)

torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.benchmark = False
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

VOCAB, D, LAYERS, HEADS, SEQ, BATCH = 8192, 256, 4, 8, 128, 16


class LanguageModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, D)
        layer = nn.TransformerEncoderLayer(D, HEADS, 4 * D, dropout=0.1, batch_first=True, norm_first=True)
        self.body = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.head = nn.Linear(D, VOCAB)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(SEQ))

    def forward(self, tokens):
        return self.head(self.body(self.embed(tokens), mask=self.mask, is_causal=True))


model = LanguageModel().cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
tokens = torch.randint(0, VOCAB, (args.steps, BATCH, SEQ + 1), generator=torch.Generator().manual_seed(1))

losses = []
metrics_text = None
torch.cuda.synchronize()
start = time.perf_counter()
for step in range(args.steps):
    with torch.cuda.nvtx.range(f"step {step}"):
        batch = tokens[step].cuda()
        with torch.cuda.nvtx.range("forward"):
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), batch[:, 1:].reshape(-1))
        with torch.cuda.nvtx.range("backward"):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
        with torch.cuda.nvtx.range("optimizer"):
            optimizer.step()
        losses.append(loss.detach())
    if step == 19:
        torch.cuda.synchronize()
        warm = time.perf_counter()
    if args.metrics_out and step == args.steps // 2:
        bind = os.environ["CUDASCOPE_METRICS"]
        metrics_text = urllib.request.urlopen(f"http://{bind}/metrics", timeout=10).read().decode()
        with open(args.metrics_out, "w") as f:
            f.write(metrics_text)
torch.cuda.synchronize()
end = time.perf_counter()

stats = memory_stats(args.allocator)
keys = ["allocated_bytes.all.current", "reserved_bytes.all.current", "allocated_bytes.all.peak", "reserved_bytes.all.peak", "active_bytes.all.peak", "requested_bytes.all.peak",
        "allocation.all.allocated", "segment.all.allocated", "num_device_alloc", "num_device_free",
        "num_alloc_retries", "inactive_split_bytes.all.peak"]
result = {
    "allocator": args.allocator, "conf": conf(), "steps": args.steps,
    "loss_bits": torch.stack(losses).float().cpu().view(torch.int32).tolist(),
    "first_loss": losses[0].item(), "last_loss": losses[-1].item(),
    "stats": {k: stats.get(k) for k in keys},
    "wall_s": end - start, "wall_after_warmup_s": end - warm,
    "metrics_lines": None if metrics_text is None else
    [line for line in metrics_text.splitlines() if line.startswith("cudascope_") and "bytes" in line][:12],
}
if args.snapshot:
    import cudascope_torch
    cudascope_torch.dump_snapshot(args.snapshot)
print(json.dumps(result), flush=True)
if args.linger:
    time.sleep(args.linger)
