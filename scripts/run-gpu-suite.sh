#!/usr/bin/env bash
# The GPU acceptance run: on a machine with NVIDIA GPUs and PyTorch, builds cudascope and runs
# every check of the product on the real device, each against PyTorch in the same run where
# PyTorch is the reference. Prints one PASS/FAIL/SKIP line per check and a summary line, and
# writes OUT/gpu-verification.md (card, driver, CUDA, PyTorch, commit, date, every line).
#
# Usage: scripts/run-gpu-suite.sh [--dry-run] [STAGE...]   (default: every stage, in this order;
#        --dry-run names the stages it would run, and fails on a name that is none, as a run does)
#   build     configure and build (Release; CMAKE_ARGS and CMAKE_PREFIX_PATH are honoured)
#   symbols   every installed shared library exports its own API only, needs libstdc++.so.6
#   ctest     the whole ctest suite on the cuda backend: zero failures
#   journey1  a snapshot PyTorch writes of a training run: snapshot-stats equals Python's figures
#   journey2  a training loop under `run --metrics` (with a trace, its kernels and host waits
#             equal to the trace's kernels and synchronize calls; without, counting every kernel
#             by default) and a job on our allocator with CUDASCOPE_METRICS, scraped every 200 ms
#             for the whole run
#   journey3  the wrapped loop's kernels, name by name, equal torch.profiler's for the same steps
#   frameworks  programs not written with PyTorch, wrapped: a JAX training loop and a CuPy
#             program (bench/journeys/jax_train.py, cupy_steps.py; SKIP where this Python lacks
#             one) under `run -o` compute what they compute plain, to the bit, and their traces
#             hold the same kernels each step (framework_trace_check.py); under `run --metrics
#             -o` the last scrape's kernels equal the trace's, as journey2's
#   replays   every recorded sequence in tests/data on the cuda backend against PyTorch's figures,
#             beside PyTorch replaying the same sequences on this GPU
#   whatif    `cudascope whatif` against the peaks PyTorch reserves under each setting, to the byte
#   torch     graph pools, pinned-memory statistics and RNG against PyTorch on this GPU
#   ranks     with 2+ GPUs: the DDP check (bench/ranks) and comm against torch.cuda.comm; with 4+
#             GPUs collectives of two process groups paired by communicator (run_tp_dp_check.sh)
#   overhead  plain against metrics-only as it records by default, 9 rounds, against 1.02x
#             (about 5 minutes; run by name, not by default: it fails until the default meets the
#             budget on the launch-bound loop, 1.05-1.08x in bench/results/overhead.md)
#   overhead_paired  the same cost measured inside each process, a recording's phase against
#             the phases before and after it (run_paired_overhead.py, 9 rounds, about 9 minutes
#             with metrics-only alone; run by name;
#             OVERHEAD_ROUNDS, OVERHEAD_CONFIGS (e.g. metrics-only,mo-kernel-kinds) and
#             OVERHEAD_LOOP (mlp or transformer) as its --rounds, --configs and --loop)
#   overhead_windows  metrics-only's per-kernel records switched on and off every half second
#             inside one process, each window against the stretches beside it, on the MLP loop
#             and the transformer step (run_window_overhead.py; about 4 minutes; run by name;
#             OVERHEAD_SECONDS, OVERHEAD_RUNS, OVERHEAD_ACTIVITIES and OVERHEAD_LOOP as its
#             --seconds, --runs, --activities and --loop; each process's blocks and switches
#             kept under OUT/overhead_windows, which run_window_overhead.py --kept pools with
#             other calls' without a GPU). Its lines give the median's 95% interval; the MLP
#             loop needs about four runs (OVERHEAD_LOOP=mlp OVERHEAD_RUNS=4, about 7 minutes)
#             for one a few percent wide. It switches CUPTI's records, as the opt-in sampling
#             does (below)
#   sampling  opt-in sampled kernel records (CUDASCOPE_METRICS_SAMPLING=1; run by name, not by
#             default: switching CUPTI's records has crashed its worker thread, docs/metrics.md):
#             the journey-2 job's estimate against its traced count, then the job again and again
#             with records switched 200 times a second (SAMPLING_STRESS_RUNS runs, default 12,
#             SAMPLING_STRESS_PARALLEL at once, default 4, about a minute in all;
#             SAMPLING_STRESS_CONTROL more recording every kernel, default 0; a run still going
#             after SAMPLING_STRESS_TIMEOUT seconds, default 120, is hung: every thread's stack
#             is written to its log, then it is killed; the jobs inherit CUPTI's settings to
#             try, CUDASCOPE_CUPTI_PER_THREAD_BUFFERS and _PERIODIC_FLUSH; SAMPLING_STRESS_VARIANTS,
#             space-separated LABEL:VAR=VALUE[,VAR=VALUE], adds as many runs again of each with
#             those settings, alternating with the plain runs and counted apart, e.g.
#             SAMPLING_STRESS_VARIANTS=shared-buffers:CUDASCOPE_CUPTI_PER_THREAD_BUFFERS=0)
#   report    the summary line and OUT/gpu-verification.md
# The jobs of journey2 and sampling run with bench/journeys/crash_stack.c preloaded: one
# that dies of a signal leaves its native stack, named, at the end of its log (and a stress
# run that hangs, every thread's).
# Stages may run in separate calls (the build and OUT persist); the results accumulate in
# OUT/results.txt until a `build` stage starts them afresh.
# Environment: BUILD_DIR (default build-gpu), OUT (default gpu-results), CMAKE_ARGS, CUDASCOPE_COMMIT
# (the commit the report names, where the checkout has no .git).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-gpu}
out=${OUT:-$root/gpu-results}
cli=$build/cli/cudascope
results=$out/results.txt
jobs=$(nproc)
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0
mkdir -p "$out"

record() {  # record STATUS NAME DETAIL
  printf '%s %s: %s\n' "$1" "$2" "$3" | tee -a "$results"
}

# check NAME LOG COMMAND...: runs COMMAND with its output in OUT/LOG. PASS on exit 0, else
# FAIL; the detail is the last PASS/FAIL line the command printed, or its last line.
check() {
  local name=$1 log=$out/$2 start=$SECONDS rc detail
  shift 2
  "$@" >"$log" 2>&1
  rc=$?
  detail=$(grep -E '^(PASS|FAIL)' "$log" | tail -1 | sed -E 's/^(PASS|FAIL):? ?//')
  [ -n "$detail" ] || detail=$(grep -v '^\s*$' "$log" | tail -1)
  if [ $rc -eq 0 ]; then
    record PASS "$name" "$detail ($((SECONDS - start)) s)"
  else
    python3 "$root/bench/journeys/crash_stacks.py" "$log" >>"$log" 2>&1
    record FAIL "$name" "$detail (exit $rc, log $(basename "$log"))"
  fi
}

gpu_count() { nvidia-smi -L 2>/dev/null | wc -l; }

stage_build() {
  : >"$results"
  local log=$out/build.log
  # shellcheck disable=SC2086  # CMAKE_ARGS is a list of arguments
  if cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDASCOPE_WITH_GUI=OFF \
       ${CMAKE_ARGS:-} >"$log" 2>&1 && cmake --build "$build" -j "$jobs" >>"$log" 2>&1; then
    record PASS build "$(grep -E 'cudascope: cuda backend' "$log" | sed 's/^-- //' | head -1)"
  else
    record FAIL build "$(grep -E 'error|FAILED' "$log" | head -3 | tr '\n' ' ') (log build.log)"
    return 1
  fi
}

stage_symbols() {
  rm -rf "$out/prefix"
  cmake --install "$build" --prefix "$out/prefix" >"$out/install.log" 2>&1 ||
    { record FAIL symbols "cmake --install failed (log install.log)"; return; }
  check symbols symbols.log "$root/tests/package/exported_symbols_check.sh" "$out/prefix"
}

stage_ctest() {
  local log=$out/ctest_cuda.log start=$SECONDS rc skipped
  (cd "$build" && CUDASCOPE_BACKEND=cuda ctest -j 8 --timeout 300 --output-on-failure) >"$log" 2>&1
  rc=$?
  skipped=$(grep -c '\*\*\*Skipped\|Not Run (Disabled)\|Skipped ' "$log")
  local line
  line="$(grep -E 'tests passed' "$log" | tail -1), $skipped skipped with their reason"
  if [ $rc -eq 0 ]; then
    record PASS ctest-cuda "$line ($((SECONDS - start)) s)"
  else
    record FAIL ctest-cuda "$line; failed: $(sed -n '/The following tests FAILED/,$p' "$log" | grep -E '^\s+[0-9]+ -' |
      sed -E 's/^\s+[0-9]+ - //' | tr '\n' ';') (log ctest_cuda.log)"
  fi
}

stage_journey1() {
  check journey1-torch-snapshot journey1.log python3 "$root/bench/journeys/snapshot_figures_check.py" \
    --cudascope "$cli" --out "$out/journey1"
}

# Sets with_crash_stack: an `env` command line that runs a job with the crash-stack library
# (built into OUT) preloaded and Python's faulthandler on.
prepare_crash_stack() {
  local library
  library=$(python3 "$root/bench/journeys/crash_stacks.py" --build "$out/crash_stack") || return 1
  with_crash_stack=(env "LD_PRELOAD=$library${LD_PRELOAD:+ $LD_PRELOAD}" PYTHONFAULTHANDLER=1)
}

# traced_kernels TRACE: the number of kernels `cudascope stats` reads from TRACE (empty if none).
traced_kernels() {
  "$cli" stats --json "$1" 2>/dev/null |
    python3 -c 'import json,sys; print(sum(r["count"] for r in json.load(sys.stdin)["kernels"]))' 2>/dev/null
}

stage_journey2() {
  local train=$root/bench/profiler/torch_train.py loop=$root/bench/torch_allocator/train_loop.py traced
  prepare_crash_stack || { record FAIL journey2 "cannot build bench/journeys/crash_stack.c"; return 1; }
  check journey2-metrics-with-trace journey2_trace.log python3 "$root/bench/journeys/metrics_scrape_check.py" \
    --addr 127.0.0.1:9471 --interval 0.2 --trace "$out/journey2_trace.json.gz" --cudascope "$cli" -- \
    "${with_crash_stack[@]}" "$cli" run --metrics 127.0.0.1:9471 -o "$out/journey2_trace.json.gz" -- \
    python3 "$train" --steps 40 --warmup 2 --linger 1.5
  traced=$(traced_kernels "$out/journey2_trace.json.gz")
  # Without a trace every kernel is still counted (the default): the count equals the trace's.
  check journey2-metrics-no-trace journey2_no_trace.log python3 "$root/bench/journeys/metrics_scrape_check.py" \
    --addr 127.0.0.1:9472 --interval 0.2 --kernels "${traced:-0}" -- "${with_crash_stack[@]}" \
    "$cli" run --metrics 127.0.0.1:9472 --no-trace -- python3 "$train" --steps 40 --warmup 2 --linger 1.5
  check journey2-torch-allocator-metrics journey2_allocator.log env PYTHONPATH="$build/lib" \
    CUDASCOPE_METRICS=127.0.0.1:9473 CUBLAS_WORKSPACE_CONFIG=:4096:8 \
    python3 "$root/bench/journeys/metrics_scrape_check.py" --addr 127.0.0.1:9473 --interval 0.2 --allocator -- \
    "${with_crash_stack[@]}" python3 "$loop" --allocator cudascope --steps 100 --linger 1.5
}

# Sampled kernel records, opt-in: first an estimate of the traced count's size. This job
# launches its kernels within a few seconds, a handful of default windows (50 ms a second),
# whose estimate can be off several times over (25,280 for 6,144 on an H100): here one window
# in every two (0.05 s every 0.1 s), so the check is of the sampled path end to end; the
# estimator's error at the default is measured by bench/profiler/run_overhead_bench.py. Then
# the stress runs, which no run may fail to survive.
stage_sampling() {
  local train=$root/bench/profiler/torch_train.py traced variant variants=()
  for variant in ${SAMPLING_STRESS_VARIANTS:-}; do variants+=(--variant "$variant"); done
  prepare_crash_stack || { record FAIL sampling "cannot build bench/journeys/crash_stack.c"; return 1; }
  "$cli" run -o "$out/sampling_trace.json.gz" -- python3 "$train" --steps 40 --warmup 2 >"$out/sampling_trace.log" 2>&1
  traced=$(traced_kernels "$out/sampling_trace.json.gz")
  check sampling-estimate sampling_estimate.log python3 "$root/bench/journeys/metrics_scrape_check.py" \
    --addr 127.0.0.1:9474 --interval 0.2 --estimated "${traced:-0}" --tolerance 0.35 -- \
    "${with_crash_stack[@]}" CUDASCOPE_METRICS_SAMPLING=1 CUDASCOPE_METRICS_SAMPLE_WINDOW=0.05 \
    CUDASCOPE_METRICS_SAMPLE_PERIOD=0.1 "$cli" run --metrics 127.0.0.1:9474 --no-trace -- \
    python3 "$train" --steps 40 --warmup 2 --linger 1.5
  check sampling-stress sampling_stress.log python3 "$root/bench/journeys/sampling_stress_check.py" \
    --cli "$cli" --out "$out/sampling_stress" --runs "${SAMPLING_STRESS_RUNS:-12}" \
    --parallel "${SAMPLING_STRESS_PARALLEL:-4}" --control "${SAMPLING_STRESS_CONTROL:-0}" \
    --run-timeout "${SAMPLING_STRESS_TIMEOUT:-120}" "${variants[@]}" -- \
    python3 "$train" --steps 40 --warmup 2 --linger 1
}

journey3() {
  local train=$root/bench/profiler/torch_train.py dir=$out/journey3
  mkdir -p "$dir"
  "$cli" run -o "$dir/ours.json.gz" -- python3 "$train" --steps 5 --warmup 2 || return 1
  python3 "$train" --steps 5 --warmup 2 --whole-program --torch-profiler "$dir/kineto.json" || return 1
  "$cli" stats --json "$dir/ours.json.gz" >"$dir/ours.stats.json" || return 1
  "$cli" stats --json "$dir/kineto.json" >"$dir/kineto.stats.json" || return 1
  python3 "$root/bench/journeys/compare_stats.py" "$dir/ours.stats.json" "$dir/kineto.stats.json"
}
stage_journey3() { check journey3-kernels-vs-torch-profiler journey3.log journey3; }

stage_frameworks() {
  local framework port=9480
  prepare_crash_stack || { record FAIL frameworks "cannot build bench/journeys/crash_stack.c"; return 1; }
  # A framework that imports but sees no GPU (JAX without its CUDA plugin runs on the CPU) is
  # skipped, not failed for the kernels it never launches.
  local -A program=([jax]=jax_train.py [cupy]=cupy_steps.py)
  local -A on_gpu=([jax]='import jax; assert jax.default_backend() == "gpu"'
                   [cupy]='import cupy; assert cupy.cuda.runtime.getDeviceCount() > 0')
  for framework in jax cupy; do
    port=$((port + 1))
    if ! python3 -c "${on_gpu[$framework]}" >/dev/null 2>&1; then
      record SKIP "frameworks-$framework" "no $framework in this Python that sees a GPU"
      continue
    fi
    check "frameworks-$framework-trace" "frameworks_${framework}_trace.log" python3 \
      "$root/bench/journeys/framework_trace_check.py" --cli "$cli" --out "$out/frameworks" --steps 10 -- \
      "${with_crash_stack[@]}" python3 "$root/bench/journeys/${program[$framework]}"
    check "frameworks-$framework-metrics" "frameworks_${framework}_metrics.log" python3 \
      "$root/bench/journeys/metrics_scrape_check.py" --addr "127.0.0.1:$port" --interval 0.2 \
      --trace "$out/frameworks/${framework}_metrics.json.gz" --cudascope "$cli" -- "${with_crash_stack[@]}" \
      "$cli" run --metrics "127.0.0.1:$port" -o "$out/frameworks/${framework}_metrics.json.gz" -- \
      python3 "$root/bench/journeys/${program[$framework]}" --steps 10 --linger 1.5
  done
}

stage_replays() {
  check replays-vs-pytorch replays.log python3 "$root/bench/runtime/replay_vs_torch.py" "$cli" \
    "$root"/tests/data/replay_*.jsonl.gz
}

stage_whatif() {
  check whatif-vs-pytorch whatif.log python3 "$root/bench/whatif/torch_whatif_check.py" --cudascope "$cli" \
    --out "$out/whatif"
}

# A C++ driver of the runtime, built beside the build: bench/torch_compare/NAME.cpp.
driver() {
  g++ -std=c++20 -O2 -I "$root/runtime/include" -I "$build/runtime/include" "$root/bench/torch_compare/$1.cpp" \
    -o "$build/$1" -L "$build/lib" -lcudascope_runtime -Wl,-rpath,"$build/lib" && echo "$build/$1"
}

stage_torch() {
  export CUDASCOPE_BACKEND=cuda
  check graph-pools-vs-pytorch graph_pools.log python3 "$root/bench/torch_compare/graph_pool_check.py" \
    --graph-pool-dump "$(driver graph_pool_dump)"
  if [ -f "$root/bench/torch_compare/host_stats_check.py" ]; then
    check pinned-memory-stats-vs-pytorch host_stats.log python3 "$root/bench/torch_compare/host_stats_check.py" \
      --host-stats-dump "$(driver host_stats_dump)"
  fi
  check rng-vs-pytorch rng.log python3 "$root/bench/torch_compare/rng_check.py" --rng-dump "$(driver rng_dump)"
  unset CUDASCOPE_BACKEND
}

stage_ranks() {
  if [ "$(gpu_count)" -lt 2 ]; then
    record SKIP ranks "$(gpu_count) GPU here: the DDP and comm checks need 2 (run this stage on a 2-GPU machine)"
    return
  fi
  check ranks-ddp ranks_ddp.log "$root/bench/ranks/run_ddp_check.sh" "$build" "$out/ranks"
  CUDASCOPE_BACKEND=cuda check comm-vs-torch-cuda-comm comm.log python3 "$root/bench/torch_compare/comm_check.py" \
    --comm-dump "$(driver comm_dump)"
  if [ "$(gpu_count)" -ge 4 ]; then
    check ranks-tp-dp-by-communicator ranks_tp_dp.log bash "$root/bench/ranks/run_tp_dp_check.sh" "$cli" "$out/tp_dp"
  fi
}

# What metrics cost a job: plain against metrics-only (`run --metrics --no-trace`, every kernel
# recorded, as by default), 9 rounds alternating, against 1.02x (bench/profiler/
# run_overhead_bench.py; the whole table of recording modes, the opt-in sampled design's among
# them, is that script's default run). About 5 minutes.
stage_overhead() {
  check overhead-metrics-only overhead.log python3 "$root/bench/profiler/run_overhead_bench.py" --cli "$cli" \
    --configs metrics-only --rounds 9
}

stage_overhead_paired() {
  check overhead-metrics-only-paired overhead_paired.log python3 "$root/bench/profiler/run_paired_overhead.py" \
    --cli "$cli" --rounds "${OVERHEAD_ROUNDS:-9}" --configs "${OVERHEAD_CONFIGS:-metrics-only}" \
    --loop "${OVERHEAD_LOOP:-mlp}"
}

stage_overhead_windows() {
  check overhead-metrics-only-windows overhead_windows.log python3 "$root/bench/profiler/run_window_overhead.py" \
    --cli "$cli" --seconds "${OVERHEAD_SECONDS:-40}" --runs "${OVERHEAD_RUNS:-1}" --keep "$out/overhead_windows" \
    ${OVERHEAD_ACTIVITIES:+--activities "$OVERHEAD_ACTIVITIES"} ${OVERHEAD_LOOP:+--loop "$OVERHEAD_LOOP"}
}

stage_report() {
  local pass fail skip md=$out/gpu-verification.md
  pass=$(grep -c '^PASS ' "$results") fail=$(grep -c '^FAIL ' "$results") skip=$(grep -c '^SKIP ' "$results")
  {
    echo "## $(date -u +%Y-%m-%d): $(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c |
      sed -E 's/^ *([0-9]+) /\1x /' | paste -sd, -)"
    echo
    echo "- card: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1), $(gpu_count) GPU(s)"
    echo "- driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)," \
      "$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' | sed 's/release/CUDA/')," \
      "$(python3 -c 'import torch; print("PyTorch", torch.__version__)' 2>/dev/null)," \
      "$(g++ --version | head -1)"
    # A copy of the checkout without its .git (a GPU machine's) names its commit in CUDASCOPE_COMMIT.
    echo "- commit ${CUDASCOPE_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}, run $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo
    echo '```'
    cat "$results"
    echo "summary: $pass passed, $fail failed, $skip skipped"
    echo '```'
  } >"$md"
  echo "summary: $pass passed, $fail failed, $skip skipped ($md)"
  [ "$fail" -eq 0 ]
}

dry_run=false
case "${1:-}" in
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  --dry-run) dry_run=true; shift ;;
esac
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(build symbols ctest journey1 journey2 journey3 frameworks replays whatif torch ranks report)
status=0
for stage in "${stages[@]}"; do
  if ! declare -F "stage_$stage" >/dev/null; then
    echo "run-gpu-suite: no stage '$stage' (see the usage at the top of $0)" >&2
    exit 2
  fi
done
if $dry_run; then
  echo "run-gpu-suite: would run ${stages[*]}"
  exit 0
fi
for stage in "${stages[@]}"; do
  echo "== $stage"
  "stage_$stage" || status=1
  if [ "$stage" = build ] && [ $status -ne 0 ]; then break; fi
done
exit $status
