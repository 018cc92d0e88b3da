#!/usr/bin/env bash
# The trace benchmarks of bench/results/trace.md on this machine:
#   bench/analysis/run_trace_bench.sh BUILD_DIR [BYTES]   (default 1 GiB)
# Generates a Kineto-shaped trace of BYTES into BUILD_DIR/bench-data (reused when present),
# then times trace_bench (load+index, peak RSS, stats), `cudascope stats` and Python's
# json.load on the same file, each with /usr/bin/time for wall time and peak RSS.
set -euo pipefail
build="${1:?usage: run_trace_bench.sh BUILD_DIR [BYTES]}"
bytes="${2:-1073741824}"
data="$build/bench-data"
trace="$data/kineto_like_${bytes}.json"
mkdir -p "$data"
gen="$(find "$build" -name make_kineto_like_trace -type f -perm -u+x | head -n 1)"
bench="$(find "$build" -name trace_bench -type f -perm -u+x | head -n 1)"
cli="$(find "$build" -name cudascope -type f -perm -u+x | head -n 1)"
if [[ ! -s "$trace" ]]; then
  /usr/bin/time -f "generate: %e s" "$gen" "$trace" --bytes "$bytes"
fi
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(date -u +%Y-%m-%d)"
"$bench" "$trace"
/usr/bin/time -f "cudascope stats: %e s wall, %M KiB peak RSS" "$cli" stats "$trace" > /dev/null
/usr/bin/time -f "python3 json.load: %e s wall, %M KiB peak RSS" python3 -c \
  "import json, sys; t = json.load(open(sys.argv[1])); print('python events:', len(t['traceEvents']))" "$trace"
