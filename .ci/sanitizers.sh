#!/usr/bin/env bash
# The sanitizer builds of the runtime's, profiler's and analysis' tests, run on the sim
# backend: AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/), then ThreadSanitizer
# (build-tsan/). Usage: .ci/sanitizers.sh [asan|tsan|all] [build|run|all]
# (default all all: the second argument lets scripts/run-tests.sh time building and running apart).
#
# The ASan build is also the coverage build (gcc --coverage): one instrumented build runs every
# test of tests/runtime, tests/profiler and tests/analysis under ASan and UBSan, and
# `scripts/coverage.sh --report build-asan` reads the counts that run leaves. A second build of
# the same sources for coverage alone took a fifth of the CI run. The TSan build adds the
# profiler's tests (record buffers from many threads, sessions, sampling switched every
# millisecond while threads launch) to the runtime's.
set -euo pipefail
cd "$(dirname "$0")/.."
which="${1:-all}"
phase="${2:-all}"
case "$which" in asan|tsan|all) ;; *) echo "usage: $0 [asan|tsan|all] [build|run|all]" >&2; exit 2 ;; esac
case "$phase" in build|run|all) ;; *) echo "usage: $0 [asan|tsan|all] [build|run|all]" >&2; exit 2 ;; esac
jobs="${CUDASCOPE_JOBS:-2}"
# -O1 and line tables: what the sanitizers' own documentation advises (reports keep file:line
# frames), and far quicker to build than RelWithDebInfo's -O2 -g.
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DCUDASCOPE_WITH_GUI=OFF -DCUDASCOPE_BUILD_BENCH=OFF
        -DCUDASCOPE_WITH_PROMETHEUS=OFF -DCUDASCOPE_WITH_CUDA=OFF -DCUDASCOPE_TEST_TIMEOUT_SCALE=4)
coverage=("-DCMAKE_CXX_FLAGS=--coverage -fprofile-update=atomic" "-DCMAKE_C_FLAGS=--coverage -fprofile-update=atomic"
          -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage)
# Each build makes only what its run below uses: the ASan build the test executables of the three
# folders that its ctest runs (unit_tests_<folder>: not the GPU tests, nor the integration tests
# with the command and the injection library they need), the TSan build no analysis library.
asan_dirs=(tests/runtime tests/profiler tests/analysis)
asan_targets=(unit_tests_runtime unit_tests_profiler unit_tests_analysis)
tsan_targets=(allocator_threads_test allocator_test allocator_replay_test runtime_test runtime_sim_test host_allocator_test blas_test ipc_test graphs_test
              profiler_test)
export CUDASCOPE_BACKEND=sim

run() {  # run BUILD_DIR TEST...
  local dir="$1"; shift
  for t in "$@"; do
    echo "== $dir: $t"
    # The allocator's replays need room for PyTorch's peaks on the sim device (as ctest sets).
    # Not those recorded with expandable segments: each segment reserves 1 1/8 of the device
    # (144 GiB here, per stream and pool), and ThreadSanitizer leaves the process about 1.5 TiB
    # of address space, so the sim reserves them smaller and a replay that maps past that
    # differs from the GPU's (the main ctest and the ASan run replay them whole).
    if [[ "$t" == allocator_replay_test ]]; then
      CUDASCOPE_SIM_MEMORY=128GiB "$dir/tests/runtime/$t" --gtest_brief=1 \
        --gtest_filter='-Recorded/ReplayTest.GivesPyTorchsMemoryStatsExactly/*expandable*'
    elif [[ "$t" == allocator_test ]]; then
      # Not the history ring's placement: TSan's mmap keeps every mapping inside its own
      # application ranges and drops the hint the ring is placed by.
      CUDASCOPE_SIM_MEMORY=128GiB "$dir/tests/runtime/$t" --gtest_brief=1 \
        --gtest_filter='-TraceBufferTest.TheRingIsMappedFarFromWhereMappingsWithoutAHintGo'
    else
      "$(find "$dir/tests" -name "$t" -type f -perm -u+x | head -n 1)" --gtest_brief=1
    fi
  done
}

if [[ "$which" == all || "$which" == asan ]] && [[ "$phase" != run ]]; then
  # The analysis library counts coverage with plain increments (.ci/coverage_counters.cmake).
  cmake -S . -B build-asan "${common[@]}" "${coverage[@]}" "-DCUDASCOPE_SANITIZE=address;undefined" \
    "-DCMAKE_PROJECT_INCLUDE=$PWD/.ci/coverage_counters.cmake" >/dev/null
  cmake --build build-asan -j "$jobs" --target "${asan_targets[@]}"
fi
if [[ "$which" == all || "$which" == asan ]] && [[ "$phase" != build ]]; then
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Every unit test of the three folders: the allocator's property, model and thread tests,
  # the snapshot and trace readers with their fuzz corpora (they take untrusted files), cuBLAS
  # handles, IPC, graphs' pools, the stream sanitizer, the sessions. Not the integration tests
  # (whole `cudascope run` programs, timed by the main run). The allocator's random-operation
  # test runs a quarter of its 1,000,000 operations, the model test a quarter of its steps and
  # the fuzz tests of traces and snapshots half their rounds: the main run does the full volume at -O2, and here
  # the same paths repeat at ASan's threefold cost.
  export CUDASCOPE_MODEL_OPS=5000 CUDASCOPE_FUZZ_ROUNDS=750
  find build-asan -name '*.gcda' -delete  # coverage counts of this run only
  status=0
  # The allocator's random-operation test, the longest, runs beside the others from the start
  # rather than alone at the end (a single-threaded tail of two minutes on two cores).
  volume=AllocatorPropertyTest.RandomOperationsKeepEveryInvariant
  volume_log=build-asan/allocator_property_volume.log
  CUDASCOPE_PROPERTY_OPS=250000 build-asan/tests/runtime/allocator_property_test --gtest_filter="$volume" \
    --gtest_brief=1 >"$volume_log" 2>&1 &
  volume_pid=$!
  # One ctest over the three folders (a test file of its own that lists them), so that their tests
  # share both cores to the end instead of each folder ending on one. The executables of the gpu
  # and integration tests are not built here: ctest lists each as <target>_NOT_BUILT, unlabelled.
  mkdir -p build-asan/sanitizer-tests
  printf 'subdirs("%s")\n' "${asan_dirs[@]/#/$PWD/build-asan/}" >build-asan/sanitizer-tests/CTestTestfile.cmake
  echo "== not built here (gpu or integration tests):" \
    $(ctest --test-dir build-asan/sanitizer-tests -N -R '_NOT_BUILT$' | sed -n 's/.*Test *#[0-9]*: \(.*\)_NOT_BUILT$/\1/p')
  # Not the sim's reservation under an address-space limit (ulimit -v): the sanitizers' own
  # shadow memory needs more address space than the limit leaves.
  ctest --test-dir build-asan/sanitizer-tests -j "$jobs" -LE 'gpu|integration' \
    -E "^(${volume//./\\.}|.*_NOT_BUILT|SimReservationTest\..*)\$" --timeout 1800 --output-on-failure || status=1
  if wait "$volume_pid"; then
    echo "== $volume (CUDASCOPE_PROPERTY_OPS=250000): passed"
  else
    cat "$volume_log"
    echo "== $volume (CUDASCOPE_PROPERTY_OPS=250000): FAILED"
    status=1
  fi
  [[ "$status" == 0 ]] || exit "$status"
fi

if [[ "$which" == all || "$which" == tsan ]] && [[ "$phase" != run ]]; then
  cmake -S . -B build-tsan "${common[@]}" -DCUDASCOPE_SANITIZE=thread >/dev/null
  cmake --build build-tsan -j "$jobs" --target "${tsan_targets[@]}"
fi
if [[ "$which" == all || "$which" == tsan ]] && [[ "$phase" != build ]]; then
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
  # The multi-threaded variant is the one TSan is for; the single-threaded suites add the
  # sim backend's stream worker threads under TSan too.
  # Not sanitizer_test: its race tests run unsynchronised kernels on two streams on purpose
  # (what the stream sanitizer must catch), which are data races on the sim's host threads.
  # Two lanes at once, of about half a minute each (the tests mostly wait on the sim's stream
  # threads: half a minute of CPU in a minute one after another); each lane stops at its first
  # failure, and its output is printed when both have ended.
  lanes=build-tsan/lanes
  mkdir -p "$lanes"
  (
    CUDASCOPE_PROPERTY_OPS=160000 run build-tsan allocator_threads_test
    run build-tsan allocator_replay_test runtime_test blas_test
  ) >"$lanes/1.log" 2>&1 &
  lane1=$!
  (run build-tsan allocator_test runtime_sim_test host_allocator_test ipc_test graphs_test profiler_test) >"$lanes/2.log" 2>&1 &
  lane2=$!
  status=0
  wait "$lane1" || status=1
  wait "$lane2" || status=1
  cat "$lanes/1.log" "$lanes/2.log"
  [[ "$status" == 0 ]] || { echo "sanitizers: a TSan test failed (its output above)"; exit 1; }
fi
[[ "$phase" == build ]] || echo "sanitizers: all passed"
