#!/usr/bin/env bash
# The tests: installs what is missing, builds, runs every ctest label (gpu tests report
# skipped without a GPU), then the sanitizer builds: ASan+UBSan over the unit tests of
# tests/runtime, tests/profiler and tests/analysis (the same build counts their coverage,
# reported last), and TSan over the runtime's threaded tests (.ci/sanitizers.sh).
# Each stage prints its wall and CPU time as it ends ("== stage build: 612 s wall, 1190 s CPU"),
# and a table of all of them closes the run, failed or not.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}

# stage NAME COMMAND...: runs COMMAND, prints its wall time and the CPU time (user + system)
# of every process it ran, and records both for the closing table; a failure ends the run.
stage_rows=()
ticks=$(getconf CLK_TCK)
children_cpu_ticks() {  # CPU time of the waited-for children of this shell (fields cutime, cstime)
  local -a stat
  read -r -a stat </proc/$$/stat
  echo $((stat[15] + stat[16]))
}
stage() {
  local name=$1 rc=0 t0 c0 wall cpu
  shift
  t0=${EPOCHREALTIME/./}
  c0=$(children_cpu_ticks)
  "$@" || rc=$?
  wall=$(((${EPOCHREALTIME/./} - t0 + 500000) / 1000000))
  cpu=$((($(children_cpu_ticks) - c0 + ticks / 2) / ticks))
  stage_rows+=("$name|$wall|$cpu|$([[ $rc == 0 ]] && echo ok || echo "FAILED ($rc)")")
  echo "== stage $name: $wall s wall, $cpu s CPU$([[ $rc == 0 ]] || echo ", FAILED (exit $rc)")"
  if [[ $rc != 0 ]]; then
    exit "$rc"
  fi
}
stage_table() {
  local row name wall cpu result total_wall=0 total_cpu=0
  [[ ${#stage_rows[@]} -gt 0 ]] || return 0
  echo
  echo "stage times ($(nproc) cores, load average now $(cut -d' ' -f1-3 /proc/loadavg)):"
  printf '  %-18s %8s %8s  %s\n' stage "wall s" "CPU s" result
  for row in "${stage_rows[@]}"; do
    IFS='|' read -r name wall cpu result <<<"$row"
    printf '  %-18s %8d %8d  %s\n' "$name" "$wall" "$cpu" "$result"
    total_wall=$((total_wall + wall)) total_cpu=$((total_cpu + cpu))
  done
  printf '  %-18s %8d %8d\n' total "$total_wall" "$total_cpu"
}
trap stage_table EXIT

stage deps "$root/scripts/install-deps.sh"
# Line tables only (-g1): the tests need file:line frames, not local variables, and full debug
# information costs a quarter of the build's compile time and most of its link time.
stage configure+build "$root/scripts/build.sh" "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" \
  "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
stage ctest ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" --timeout 900
if [ -x "$root/.ci/sanitizers.sh" ]; then
  stage "asan build" "$root/.ci/sanitizers.sh" asan build
  stage "asan run" "$root/.ci/sanitizers.sh" asan run
  stage "tsan build" "$root/.ci/sanitizers.sh" tsan build
  stage "tsan run" "$root/.ci/sanitizers.sh" tsan run
fi
# Coverage of runtime/, profiler/ and analysis/ by their own tests, from the counts the ASan
# run just left (its build is instrumented for both): the figures and the untested public entry
# points are printed; runtime/'s line coverage under 85% fails the run.
# CUDASCOPE_SKIP_COVERAGE=1 leaves it out.
if [ -z "${CUDASCOPE_SKIP_COVERAGE:-}" ] && [ -x "$root/.ci/sanitizers.sh" ]; then
  stage coverage "$root/scripts/coverage.sh" --report "$root/build-asan"
fi
