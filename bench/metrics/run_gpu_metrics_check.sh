#!/usr/bin/env bash
# Device metrics on a GPU machine: what `cudascope metrics` shows of the figures beyond
# torch.cuda's (dcgm-exporter's default set, XID events, per-process utilization, Hopper's GPM)
# while a program keeps the device busy, what NVML left out (the log), and the cost of a
# `cudascope serve` scrape, with the background reading (default) and reading NVML at each
# scrape (--health-interval-ms 0).
# Usage: bench/metrics/run_gpu_metrics_check.sh BUILD_DIR OUT_DIR
# Writes OUT_DIR/metrics.txt (the whole exposition), metrics.log (what NVML did not give),
# new_series.txt, scrape_sampled.json and scrape_at_scrape.json; exit 1 if a scrape is over
# its 5 ms budget (the sampled one) or a step failed.
set -uo pipefail
build=${1:?usage: run_gpu_metrics_check.sh BUILD_DIR OUT_DIR}
out=${2:?usage: run_gpu_metrics_check.sh BUILD_DIR OUT_DIR}
cli=$build/cli/cudascope
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
export CUDASCOPE_BACKEND=${CUDASCOPE_BACKEND:-cuda}
status=0

echo "== devices"
"$cli" devices || status=1

echo "== cudascope metrics while a program keeps device 0 busy"
"$cli" demo --iterations 3000 --kernel-ms 2 > "$out/load.log" 2>&1 &
load=$!
sleep 3
"$cli" metrics > "$out/metrics.txt" 2> "$out/metrics.log" || status=1
grep -E '^cudascope_gpu_(memory_temperature|memory_reserved|nvlink|last_xid|xid_errors|process_utilization|sm_active|sm_occupancy|tensor_active|dram_active|memory_clock|power_limit|pcie|ecc|remapped|row_remap|encoder|decoder)' \
  "$out/metrics.txt" | tee "$out/new_series.txt"
echo "-- left out (from the log):"
cat "$out/metrics.log"

echo "== serve: scrape cost (background reading, the default)"
python3 "$here/serve_scrape_bench.py" "$cli" --scrapes 300 --json "$out/scrape_sampled.json" || status=1
echo "== serve: scrape cost when NVML is read at each scrape (for comparison; no budget)"
python3 "$here/serve_scrape_bench.py" "$cli" --scrapes 100 --budget-ms 1e9 --json "$out/scrape_at_scrape.json" \
  -- --health-interval-ms 0 || status=1
kill "$load" 2> /dev/null
wait "$load" 2> /dev/null
exit $status
