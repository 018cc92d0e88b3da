#!/usr/bin/env bash
# The tests: installs what is missing, builds, runs every ctest label (gpu tests report
# skipped without a GPU), then the sanitizer builds of the runtime's tests.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 900
if [ -x "$root/.ci/sanitizers.sh" ]; then
  "$root/.ci/sanitizers.sh"
fi
# Coverage of runtime/, profiler/ and analysis/ by their own tests (an instrumented build of
# those folders): the figures and the untested public entry points are printed; runtime/'s
# line coverage under 85% fails the run. CUDASCOPE_SKIP_COVERAGE=1 leaves it out.
if [ -z "${CUDASCOPE_SKIP_COVERAGE:-}" ]; then
  "$root/scripts/coverage.sh" --core "${COVERAGE_BUILD_DIR:-$root/build-coverage}"
fi
