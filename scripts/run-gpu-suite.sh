#!/usr/bin/env bash
# On a machine with a GPU: builds cudascope, runs the whole test suite on the cuda backend,
# the gpu label, the journeys by hand and the benchmarks, writing logs to OUT (default
# gpu-results/). Extra arguments go to cmake (e.g. -DCMAKE_PREFIX_PATH=... for libtorch, which
# builds the allocator comparison against PyTorch). SUITE_ONLY=1 stops after the tests.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
out=${OUT:-$root/gpu-results}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" > "$out/configure.log" 2>&1 ||
  { tail -30 "$out/configure.log"; exit 1; }
grep "cudascope:" "$out/configure.log"
cmake --build "$build" -j "$(nproc)" -- -k 0 > "$out/build.log" 2>&1 || grep -E "error|FAILED" -A5 "$out/build.log" | head -40
cd "$build"
export CUDASCOPE_BACKEND=cuda
status=0
ctest -j4 --timeout 300 --output-on-failure > "$out/ctest_cuda.log" 2>&1 || status=1
echo "ctest on the cuda backend: $(grep -E 'tests passed' "$out/ctest_cuda.log")"
ctest -L gpu --timeout 300 --output-on-failure > "$out/ctest_gpu.log" 2>&1 || status=1
echo "ctest -L gpu: $(grep -E 'tests passed' "$out/ctest_gpu.log")"
[ -n "${SUITE_ONLY:-}" ] && exit $status

echo "== journeys"
env -u CUDASCOPE_BACKEND ./cli/cudascope demo --iterations 10 | tail -3
[ -x ./cli/cudascope ] && ./cli/cudascope metrics --allocator | grep -E "^cudascope_(gpu|device_info)" | head -12
./cli/cudascope run -o "$out/demo_trace.json.gz" -- ./cli/cudascope demo --iterations 10 > /dev/null
./cli/cudascope stats "$out/demo_trace.json.gz" | head -12
echo "== benchmarks"
./bench/runtime/runtime_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
  --benchmark_enable_random_interleaving=true --benchmark_out="$out/runtime_bench.json" | grep median
[ -x ./bench/runtime/allocator_compare ] && ./bench/runtime/allocator_compare | tee "$out/allocator_compare.md"
cd "$root" && bench/profiler/run_profiler_bench.sh "$build" "$out" all
exit $status
