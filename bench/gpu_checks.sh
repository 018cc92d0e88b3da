#!/usr/bin/env bash
# The GPU checks of CUDA graphs, what-if and the held-out allocator sequences, for a machine
# with a GPU, PyTorch and the build dependencies (scripts/unpack-debs.sh for a machine without
# them). Writes logs to OUT_DIR; prints a summary.
#   bench/gpu_checks.sh BUILD_DIR OUT_DIR
#  1. records the held-out sequences with PyTorch (tests/data/make_replay.py --heldout) and
#     replays them on the sim (no recorded addresses) and on the cuda backend against PyTorch;
#  2. the allocator's figures through a graph capture, replay and reset against PyTorch's;
#  3. `cudascope whatif` on training snapshots against the peaks PyTorch reached per setting;
#  4. graphs_test, sanitizer_test and the gpu-labelled graph/sanitizer tests on the cuda backend.
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: gpu_checks.sh BUILD_DIR OUT_DIR}
out=${2:?usage: gpu_checks.sh BUILD_DIR OUT_DIR}
mkdir -p "$out/heldout"
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"; date -u; } >"$out/machine.txt" 2>&1
ls "$out"/heldout/replay_heldout_*.jsonl.gz >/dev/null 2>&1 ||
  python3 "$src/tests/data/make_replay.py" --out "$out/heldout" --heldout >"$out/heldout_record.log" 2>&1
echo "== held-out sequences on sim (no recorded addresses)" | tee "$out/replays.txt"
CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_MEMORY=128GiB python3 "$src/bench/runtime/replay_stats_check.py" "$build/cli/cudascope" \
  "$out"/heldout/replay_heldout_*.jsonl.gz 2>&1 | tee -a "$out/replays.txt"
echo "== all sequences on the cuda backend" | tee -a "$out/replays.txt"
CUDASCOPE_BACKEND=cuda python3 "$src/bench/runtime/replay_stats_check.py" "$build/cli/cudascope" \
  "$src"/tests/data/replay_*.jsonl.gz "$out"/heldout/replay_heldout_*.jsonl.gz 2>&1 | tee -a "$out/replays.txt"
g++ -std=c++20 -O2 -I "$src/runtime/include" -I "$build/runtime/include" "$src/bench/torch_compare/graph_pool_dump.cpp" \
  -o "$build/graph_pool_dump" -L "$build/lib" -lcudascope_runtime -Wl,-rpath,"$build/lib" &&
  CUDASCOPE_BACKEND=cuda python3 "$src/bench/torch_compare/graph_pool_check.py" --graph-pool-dump "$build/graph_pool_dump" \
    2>&1 | tee "$out/graph_pool_check.txt"
python3 "$src/bench/whatif/torch_whatif_check.py" --cudascope "$build/cli/cudascope" --out "$out/whatif" 2>&1 |
  tee "$out/whatif_check.txt"
for t in graphs_test sanitizer_test sanitizer_gpu_test; do
  CUDASCOPE_BACKEND=cuda "$build/tests/runtime/$t" --gtest_brief=1 2>&1 | tail -15
done | tee "$out/graph_sanitizer_tests.txt"
