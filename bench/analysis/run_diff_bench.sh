#!/usr/bin/env bash
# The `cudascope diff` benchmark of bench/results/diff.md:
#   bench/analysis/run_diff_bench.sh BUILD_DIR [BYTES] [RUNS]   (default 1 GiB, 3 runs)
# Generates two Kineto-shaped traces of BYTES into BUILD_DIR/bench-data (reused when present)
# with make_kineto_like_trace: one program's two runs (--names-seed 7: the same 20,000 kernel
# names; --seed 1 and 2: other durations, sizes and order). Then times `cudascope diff A B`
# with a gate, RUNS times, each with /usr/bin/time (wall, user, sys, peak RSS) and the load
# average before and after: the machine may be shared, so CPU time is the figure to compare.
# Configure the build with -DCUDASCOPE_BUILD_BENCH=ON (for make_kineto_like_trace).
set -euo pipefail
build="${1:?usage: run_diff_bench.sh BUILD_DIR [BYTES] [RUNS]}"
bytes="${2:-1073741824}"
runs="${3:-3}"
data="$build/bench-data"
mkdir -p "$data"
gen="$(find "$build" -name make_kineto_like_trace -type f -perm -u+x | head -n 1)"
cli="$(find "$build" -name cudascope -type f -perm -u+x | head -n 1)"
a="$data/diff_a_${bytes}.json"
b="$data/diff_b_${bytes}.json"
[[ -s "$a" ]] || "$gen" "$a" --bytes "$bytes" --seed 1 --names-seed 7
[[ -s "$b" ]] || "$gen" "$b" --bytes "$bytes" --seed 2 --names-seed 7
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "files: $(stat -c %s "$a") and $(stat -c %s "$b") bytes"
for run in $(seq 1 "$runs"); do
  echo "run $run: load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
  /usr/bin/time -f "run $run: wall %e s, user %U s, sys %S s, peak RSS %M KiB" \
    "$cli" diff -q "$a" "$b" --fail-if 'kernel_time>+3%' > /dev/null
  echo "run $run: load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
done
