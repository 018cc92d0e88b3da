"""Out-of-memory and CUDA-graph behaviour under PyTorch's allocator or cudascope's.

OOM: fills the device in 8 GiB tensors inside an NVTX range until an allocation fails; prints
the exception type PyTorch raised and its message, checks that memory is served again after
freeing. Under cudascope with CUDASCOPE_OOM_SNAPSHOT set, reads the snapshot written at the
failure: the largest free block and the blocks that held the memory, with their NVTX ranges.
Graph: captures y = x * 2 with torch.cuda.graph and replays it, or reports the refusal.
Prints one JSON line.

  CUDASCOPE_OOM_SNAPSHOT=/tmp/oom.json python3 oom_and_graph.py --allocator cudascope
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import use_allocator  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--allocator", required=True, choices=["pytorch", "cudascope"])
args = parser.parse_args()

import torch  # noqa: E402

use_allocator(args.allocator)
if args.allocator == "cudascope":
    import cudascope_torch
    cudascope_torch.record_memory_history("all", "all", "python")

result = {"allocator": args.allocator}

held = []
with torch.cuda.nvtx.range("fill the device"):
    try:
        while True:
            held.append(torch.empty(8 << 30, dtype=torch.uint8, device="cuda"))
    except Exception as e:  # noqa: BLE001 - the type is what is checked
        result["oom_type"] = f"{type(e).__module__}.{type(e).__name__}"
        result["oom_is_torch_OutOfMemoryError"] = isinstance(e, torch.OutOfMemoryError)
        result["oom_message"] = str(e)[:400]
result["tensors_before_oom"] = len(held)
del held[len(held) // 2:]
again = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
again.fill_(1)
result["served_after_oom"] = int(again[-1].item()) == 1
del again, held

path = os.environ.get("CUDASCOPE_OOM_SNAPSHOT")
if args.allocator == "cudascope" and path and os.path.exists(path):
    with open(path) as f:
        snapshot = json.load(f)
    blocks = [b for s in snapshot["segments"] for b in s["blocks"]]
    inactive = [b["size"] for b in blocks if b["state"] == "inactive"]
    active = [b for b in blocks if b["state"].startswith("active")]
    annotations = {}
    for entry in snapshot["device_traces"][0]:
        if entry["action"] == "alloc":
            annotations[entry["addr"]] = entry.get("user_metadata", "")
    result["oom_snapshot"] = {
        "segments": len(snapshot["segments"]),
        "largest_free_block": max(inactive, default=0),
        "active_blocks": len(active),
        "active_bytes": sum(b["size"] for b in active),
        "held_by": sorted({annotations.get(b["address"], "?") for b in active}),
        "oom_entries": sum(1 for e in snapshot["device_traces"][0] if e["action"] == "oom"),
    }

torch.cuda.empty_cache()
x = torch.ones(1 << 20, device="cuda")
graph = torch.cuda.CUDAGraph()
try:
    with torch.cuda.graph(graph):
        y = x * 2
    x.fill_(3)
    graph.replay()
    torch.cuda.synchronize()
    result["graph"] = "captured and replayed, y[0] = %g" % y[0].item()
except RuntimeError as e:
    result["graph"] = "refused: " + str(e).splitlines()[0][:400]
torch.cuda.set_stream(torch.cuda.default_stream())
result["served_after_graph"] = float((x + 1).sum().item()) > 0
print(json.dumps(result))
