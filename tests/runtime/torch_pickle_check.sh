#!/usr/bin/env bash
# PyTorch's own tools read the snapshot pickle cudascope writes: `cudascope demo --snapshot`
# on the sim backend, then allocator_torch_pickle_check.py (pickle.load and every
# torch.cuda._memory_viz view). Exit 77 (skipped) where PyTorch is not installed.
# Usage: torch_pickle_check.sh CUDASCOPE_CLI CHECK_SCRIPT
set -euo pipefail
cli=${1:?usage: torch_pickle_check.sh CUDASCOPE_CLI CHECK_SCRIPT}
check=${2:?usage: torch_pickle_check.sh CUDASCOPE_CLI CHECK_SCRIPT}
if ! python3 -c "import torch.cuda._memory_viz" 2>/dev/null; then
  echo "skipped: PyTorch is not installed here (python3 cannot import torch.cuda._memory_viz)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CUDASCOPE_BACKEND=sim "$cli" demo --iterations 5 --snapshot "$tmp/demo.pickle" > "$tmp/demo.log"
python3 "$check" "$tmp/demo.pickle"
