#!/bin/sh
# A trace written by `cudascope run` around the demo on the sim backend, read back by the
# independent reader (Python's json and the event rules, check_trace_rules.py), which must
# find kernels, launches with their flows, NVTX ranges and memory counters in it.
# Usage: run_and_check_trace.sh CUDASCOPE PYTHON
set -eu
cli="$1"
python="$2"
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CUDASCOPE_BACKEND=sim "$cli" run -o "$out/demo.json.gz" -- "$cli" demo --iterations 3 >"$out/run.log" 2>&1 ||
  { cat "$out/run.log"; exit 1; }
"$python" "$here/check_trace_rules.py" --strict-flows --min-events 20 "$out/demo.json.gz" | tee "$out/rules.txt"
for cat in "'kernel'" "'cuda_runtime'"; do
  grep -q "$cat" "$out/rules.txt" || { echo "no $cat events in the demo's trace"; exit 1; }
done
grep -q "'s': [1-9]" "$out/rules.txt" || { echo "no launch flows in the demo's trace"; exit 1; }
grep -q "'B': [1-9]" "$out/rules.txt" || { echo "no NVTX ranges in the demo's trace"; exit 1; }
grep -q "'C': [1-9]" "$out/rules.txt" || { echo "no memory counters in the demo's trace"; exit 1; }
