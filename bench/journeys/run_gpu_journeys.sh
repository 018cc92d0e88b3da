#!/usr/bin/env bash
# The three journeys on a PyTorch training loop, on a GPU machine with PyTorch, from a build
# of cudascope: (1) our trace and torch.profiler's of the same whole program, and the kernel
# counts `cudascope stats` reads from both; (2) `cudascope run --metrics` scraped while the
# loop runs, its kernel count against the trace of the same run; (3) the cost of --no-trace
# metrics and of full tracing against the plain loop and against CUPTI's own floor, interleaved
# in one call.
# Usage: bench/journeys/run_gpu_journeys.sh BUILD_DIR OUT_DIR
set -uo pipefail
build=${1:?usage: run_gpu_journeys.sh BUILD_DIR OUT_DIR}
out=${2:?usage: run_gpu_journeys.sh BUILD_DIR OUT_DIR}
cli=$build/cli/cudascope
here=$(cd "$(dirname "$0")" && pwd)
train=$here/../profiler/torch_train.py
mkdir -p "$out"
status=0

echo "== 1. our trace and torch.profiler's of the same program"
"$cli" run -o "$out/train_ours.json.gz" -- python3 "$train" --steps 5 --warmup 2 || status=1
python3 "$train" --steps 5 --warmup 2 --whole-program --torch-profiler /tmp/train_kineto.json || status=1
gzip -c /tmp/train_kineto.json > "$out/train_kineto.json.gz"
"$cli" stats --json "$out/train_ours.json.gz" > "$out/stats_ours.json" || status=1
"$cli" stats --json "$out/train_kineto.json.gz" > "$out/stats_kineto.json" || status=1
"$cli" stats "$out/train_kineto.json.gz" | head -25
python3 "$here/compare_stats.py" "$out/stats_ours.json" "$out/stats_kineto.json" || status=1

echo "== 2. live metrics of the wrapped loop"
python3 "$here/metrics_scrape_check.py" --addr 127.0.0.1:9461 --interval 0.5 --trace "$out/train_metrics.json.gz" \
  --cudascope "$cli" --save-last "$out/metrics_scrape.txt" -- \
  "$cli" run --metrics 127.0.0.1:9461 --metrics-label-nvtx -o "$out/train_metrics.json.gz" -- \
  python3 "$train" --steps 40 --warmup 2 --linger 1.5 || status=1
grep -E "^cudascope_(kernel|nvtx|memory|process|profiler)" "$out/metrics_scrape.txt" | head -40

echo "== 3. overhead on a launch-bound loop: the loop's own seconds (median of its 5 repetitions), 3 interleaved rounds"
loop=$here/../profiler/torch_launch_loop.py
median() { python3 -c 'import json,statistics,sys; print(statistics.median(json.loads(l)["seconds"] for l in sys.stdin if l.startswith("{")))'; }
# The floors: the same runs with CUDASCOPE_CUPTI_DISCARD=1, where CUPTI records the same
# activity kinds and the buffers are dropped undecoded: what CUPTI itself costs.
for round in 1 2 3; do
  echo "$round plain $(python3 "$loop" | median)"
  echo "$round cupti-floor-metrics $(CUDASCOPE_CUPTI_DISCARD=1 "$cli" run --metrics 127.0.0.1:9462 --no-trace -- python3 "$loop" | median)"
  echo "$round metrics-no-trace $("$cli" run --metrics 127.0.0.1:9462 --no-trace -- python3 "$loop" | median)"
  echo "$round cupti-floor-trace $(CUDASCOPE_CUPTI_DISCARD=1 "$cli" run -o /tmp/loop_floor.json.gz -- python3 "$loop" | median)"
  echo "$round full-trace $("$cli" run -o /tmp/loop.json.gz -- python3 "$loop" | median)"
done | tee "$out/overhead.txt"
exit $status
