#!/usr/bin/env bash
# Line and branch coverage of runtime/, profiler/ and analysis/ by the test suite on the sim
# backend: a separate build (build-coverage/: gcc --coverage, -O0, no GUI, no cuda backend,
# since nothing here can run CUDA), ctest without the gpu label, then gcovr's figures per
# folder, a per-file table and the public entry points no test calls in build-coverage/coverage/.
# Prints the figures; exits with ctest's status (coverage is reported either way).
# Usage: scripts/coverage.sh [--report|--core] [BUILD_DIR]   (CUDASCOPE_JOBS: parallel jobs, default nproc)
#   --report: only the report, from the counts a previous run left in BUILD_DIR (the CI step:
#             the ASan build of .ci/sanitizers.sh is built with --coverage and leaves them);
#             fails too when runtime/'s line coverage is under the minimum below.
#   --core:   only the tests in tests/runtime, tests/profiler and tests/analysis (and what
#             they depend on): the CI step, a third of the whole build. Also fails when
#             runtime/'s line coverage drops below CUDASCOPE_MIN_RUNTIME_LINES (default 85).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
report_only=0
core_only=0
case "${1:-}" in
  --report) report_only=1; shift ;;
  --core) core_only=1; shift ;;
esac
test_dirs=(tests/runtime tests/profiler tests/analysis)
build=${1:-$root/build-coverage}
jobs=${CUDASCOPE_JOBS:-$(nproc)}
"$root/scripts/install-deps.sh" gcovr
status=0
if [[ "$report_only" == 0 ]]; then
  # Atomic counter updates: the runtime's stream threads would otherwise race on the counters
  # (gcov then reports negative branch counts).
  # No -g (Debug's default): gcov reads its own notes files, and debug information would only
  # lengthen the build.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG= -DCMAKE_CXX_FLAGS_DEBUG= \
    -DCMAKE_C_FLAGS="--coverage -fprofile-update=atomic -O0" -DCMAKE_CXX_FLAGS="--coverage -fprofile-update=atomic -O0" \
    -DCMAKE_EXE_LINKER_FLAGS=--coverage -DCMAKE_SHARED_LINKER_FLAGS=--coverage \
    -DCUDASCOPE_WITH_CUDA=OFF -DCUDASCOPE_WITH_GUI=OFF -DCUDASCOPE_BUILD_BENCH=OFF >/dev/null
  if [[ "$core_only" == 1 ]]; then
    cmake --build "$build" -j "$jobs" --target "${test_dirs[@]/%//all}"
  else
    cmake --build "$build" -j "$jobs"
  fi

  # Counts from this run only.
  find "$build" -name '*.gcda' -delete
  if [[ "$core_only" == 1 ]]; then
    # Coverage needs every path once, not the volume the sanitizer runs use: fewer random
    # operations in the property, model and fuzz tests (an unoptimised build runs them slowly).
    export CUDASCOPE_PROPERTY_OPS=${CUDASCOPE_PROPERTY_OPS:-20000} CUDASCOPE_MODEL_OPS=${CUDASCOPE_MODEL_OPS:-2000}
    export CUDASCOPE_FUZZ_ROUNDS=${CUDASCOPE_FUZZ_ROUNDS:-300}
    for dir in "${test_dirs[@]}"; do
      CUDASCOPE_BACKEND=sim ctest --test-dir "$build/$dir" -j "$jobs" -LE gpu --timeout 900 --output-on-failure ||
        status=$?
    done
  else
    # The package tests link an uninstrumented consumer against the installed (instrumented)
    # libraries, which cannot work here; they test installation, not these folders.
    (cd "$build" && CUDASCOPE_BACKEND=sim ctest -j "$jobs" -LE gpu -E '^package\.' --timeout 900 --output-on-failure) ||
      status=$?
  fi
fi

out="$build/coverage"
mkdir -p "$out"
gcov_tool=gcov-$(gcc -dumpversion | cut -d. -f1)
command -v "$gcov_tool" >/dev/null || gcov_tool=gcov
gcovr_common=(--root "$root" --object-directory "$build" --gcov-executable "$gcov_tool" --gcov-ignore-parse-errors)
# CMake's compiler probes are instrumented too but never run: gcov would warn about each.
find "$build/CMakeFiles" -path '*CompilerId*' -name '*.gcno' -delete 2>/dev/null || true
echo
echo "coverage on the sim backend ($(date -u +%Y-%m-%d), $(nproc) cores):"
printf '%-10s %18s %18s\n' folder lines branches
# gcov reads the counts once, on every core, into one file of the three folders' figures
# (all.json); the tables and summaries per folder and the functions below are read from it
# (gcov over every object file took a quarter of a minute per report).
# Throw branches (every call that may throw) and unreachable ones say nothing about tests.
gcovr "${gcovr_common[@]}" -j "$jobs" --filter "$root/(runtime|profiler|analysis)/" --exclude-throw-branches \
  --exclude-unreachable-branches --json "$out/all.json" >/dev/null 2>"$out/gcovr.log"
for dir in runtime profiler analysis; do
  gcovr --root "$root" --add-tracefile "$out/all.json" --filter "$root/$dir/" \
    --txt "$out/$dir.txt" --json-summary "$out/$dir.json" >/dev/null 2>>"$out/gcovr.log"
  python3 - "$dir" "$out/$dir.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[2]))
print(f"{sys.argv[1] + '/':<10} {d['line_percent']:6.1f}% {d['line_covered']:>5}/{d['line_total']:<5} "
      f"{d['branch_percent']:6.1f}% {d['branch_covered']:>5}/{d['branch_total']:<5}")
PY
done
# Public entry points no test calls: functions of the three libraries run 0 times, outside
# detail and anonymous namespaces, whose name a public header (include/cudascope/) declares.
python3 - "$root" "$out/all.json" >"$out/untested_public.txt" <<'PY'
import json, re, subprocess, sys, pathlib
root = pathlib.Path(sys.argv[1])
headers = "".join(p.read_text(errors="replace") for d in ("runtime", "profiler", "analysis")
                  for p in (root / d / "include").rglob("*.h"))
zero = []
for f in json.load(open(sys.argv[2]))["files"]:
    for fn in f.get("functions", []):
        if fn.get("execution_count", 1) == 0:
            zero.append((f["file"], fn["lineno"], fn["name"]))
names = subprocess.run(["c++filt"], input="\n".join(n for _, _, n in zero), capture_output=True, text=True).stdout.split("\n")
seen = set()
for (file, line, _), name in zip(zero, names):
    if "detail::" in name or "(anonymous namespace)" in name or "{lambda" in name or not name.startswith("cudascope::"):
        continue
    short = re.sub(r"\(.*", "", name).split("::")[-1]
    if not re.search(r"\b" + re.escape(short) + r"\s*\(", headers) or name in seen:
        continue
    seen.add(name)
    print(f"{file}:{line}: {name}")
PY
echo "public entry points never called: $(wc -l <"$out/untested_public.txt") (list: $out/untested_public.txt)"
if [[ "$core_only" == 1 || "$report_only" == 1 ]]; then
  minimum=${CUDASCOPE_MIN_RUNTIME_LINES:-85}
  if ! python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["line_percent"] < float(sys.argv[2]))' \
      "$out/runtime.json" "$minimum"; then
    echo "coverage: runtime/ line coverage is below ${minimum}% (CUDASCOPE_MIN_RUNTIME_LINES)" >&2
    status=1
  fi
fi
echo "per-file tables: $out/{runtime,profiler,analysis}.txt"
exit "$status"
