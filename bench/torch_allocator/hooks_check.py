"""The optional hooks under a real PyTorch job on cudascope's allocator: record_stream across
streams, empty_cache, the memory fraction, a zero-size tensor, the allocator backend name,
and cudascope_torch's summary. Prints one JSON line.

  python3 hooks_check.py
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import use_allocator  # noqa: E402

import torch  # noqa: E402

use_allocator("cudascope")
import cudascope_torch  # noqa: E402

MiB = 1 << 20
result = {"allocator_backend": torch.cuda.get_allocator_backend()}

x = torch.ones(4 * MiB // 4, device="cuda")
side = torch.cuda.Stream()
# Load the kernels first: a first launch can spend long enough loading its module for a short
# sleep to end before x is freed.
torch.cuda._sleep(1000)
(x * 2).sum().item()
side.wait_stream(torch.cuda.current_stream())
with torch.cuda.stream(side):
    torch.cuda._sleep(2_000_000_000)  # about a second: the side stream still reads x when it is freed
    y = x * 2
x.record_stream(side)
address = x.data_ptr()
del x
z = torch.empty(4 * MiB // 4, device="cuda")  # must not reuse x's block: side still reads it
result["record_stream_kept_block"] = z.data_ptr() != address
torch.cuda.synchronize()
result["side_stream_result_ok"] = bool((y == 2).all().item())
del y, z

result["reserved_before_empty_cache"] = cudascope_torch.memory_reserved()
torch.cuda.empty_cache()
result["reserved_after_empty_cache"] = cudascope_torch.memory_reserved()

total = torch.cuda.get_device_properties(0).total_memory
torch.cuda.set_per_process_memory_fraction(0.25)
try:
    big = torch.empty(int(total * 0.3), dtype=torch.uint8, device="cuda")
    result["memory_fraction"] = "not enforced"
    del big
except torch.OutOfMemoryError:
    result["memory_fraction"] = "enforced (0.3 of the device refused under 0.25)"
torch.cuda.set_per_process_memory_fraction(1.0)

empty = torch.empty(0, device="cuda")
result["zero_size_tensor_data_ptr"] = empty.data_ptr()
result["summary_title"] = cudascope_torch.memory_summary().splitlines()[1].strip()
result["torch_memory_stats_under_pluggable"] = "ok"
try:
    torch.cuda.memory_stats()
except Exception as e:  # noqa: BLE001
    result["torch_memory_stats_under_pluggable"] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
print(json.dumps(result))
