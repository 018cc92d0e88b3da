#!/usr/bin/env bash
# The demo: installs the packages it needs if they are missing, builds only what it runs (the
# cudascope command, the injection library, the runtime and metrics libraries; no tests, no
# benchmarks) into build-demo/, then shows the three journeys on the current backend (the GPU
# when there is one, else the simulated device):
#   1. a traced run (`cudascope run`) and the `cudascope stats` tables of its trace,
#   2. an allocator snapshot with its history and `cudascope snapshot-stats` of it,
#   3. metrics served on 127.0.0.1 by a running program, scraped once,
# then builds the viewer (when Qt 6 is there) and prints the commands that open the snapshot
# and the trace in it, and a Prometheus scrape job for the program.
# Everything it writes goes into demo-out/ (DEMO_OUT); the build into build-demo/ (BUILD_DIR).
# DEMO_NO_VIEWER=1 skips the viewer; arguments are passed to cmake.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-demo}
out=${DEMO_OUT:-$root/demo-out}
started=$SECONDS
steps=6

# Paths as the user should type them: relative to the directory the demo was started from.
shown() { realpath -m --relative-to="$PWD" "$1"; }
step() { printf '\n[%d/%d] %s (%d s)\n' "$1" "$steps" "$2" $((SECONDS - started)); }
done_in() { printf '      done in %d s\n' $((SECONDS - $1)); }
indent() { sed 's/^/      /'; }
# Builds targets into the log, saying how far ninja has got every few seconds: one updating
# line on a terminal, a line every 15 s in a log.
build_targets() {
  cmake --build "$build" -j "$(nproc)" --target "$@" >> "$out/build.log" 2>&1 &
  local pid=$! last_line=$SECONDS counter
  while kill -0 $pid 2> /dev/null; do
    sleep 1
    counter=$(grep -o '^\[[0-9]*/[0-9]*\]' "$out/build.log" | tail -1) || true
    [ -n "$counter" ] || continue
    if [ -t 1 ]; then
      printf '\r      %s steps (%d s) ' "$counter" $((SECONDS - started))
    elif [ $((SECONDS - last_line)) -ge 15 ]; then
      printf '      %s steps (%d s)\n' "$counter" $((SECONDS - started))
      last_line=$SECONDS
    fi
  done
  [ -t 1 ] && printf '\n'
  wait $pid
}

# --- 1. packages: the ones the command needs now; Qt for the viewer comes at step 6 ---
step 1 "checking the Debian packages the demo needs"
t=$SECONDS
"$root/scripts/install-deps.sh" cmake ninja-build g++ pkg-config libcli11-dev nlohmann-json3-dev \
  libsimdjson-dev zlib1g-dev prometheus-cpp-dev
done_in $t

# --- 2. build ---
step 2 "building the cudascope command, the injection, runtime and metrics libraries into $(shown "$build")"
t=$SECONDS
mkdir -p "$out"
# -O2 without debug information: a third less compiling than RelWithDebInfo, as fast to run.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DCUDASCOPE_BUILD_TESTS=OFF -DCUDASCOPE_BUILD_BENCH=OFF "$@" \
  > "$out/configure.log" 2>&1 ||
  { tail -30 "$out/configure.log"; exit 1; }
grep "cudascope:" "$out/configure.log" | indent
targets=(cudascope_cli)
for target in cudascope_inject cudascope_metrics; do
  ninja -C "$build" -t query "$target" > /dev/null 2>&1 && targets+=("$target")
done
: > "$out/build.log"
if ! build_targets "${targets[@]}"; then
  grep -E "error:|FAILED:" -A5 "$out/build.log" | head -40
  echo "build failed: $(shown "$out/build.log")"
  exit 1
fi
done_in $t
# Commands are run as the user would type them, with paths relative to where the demo started.
cs=$(shown "$build/cli/cudascope")
case $cs in */*) ;; *) cs=./$cs ;; esac  # a bare name would be looked up on PATH
o=$(shown "$out")
# The demo runs on the GPU when there is one, else on the simulated device.
export CUDASCOPE_BACKEND=${CUDASCOPE_BACKEND:-auto}

# --- 3. journey: wrap a run, get its timeline ---
step 3 "a traced run: $cs run -o $o/trace.json.gz -- $cs demo"
"$cs" run -o "$o/trace.json.gz" -- "$cs" demo --iterations 20 --kernel-ms 2 > "$o/traced-demo.log" 2> "$o/run.log" ||
  { cat "$o/run.log" "$o/traced-demo.log"; exit 1; }
head -2 "$o/traced-demo.log" | indent
grep "trace " "$o/run.log" | indent
echo "      $cs stats $o/trace.json.gz (the first lines; all of it in $o/stats.txt):"
"$cs" stats "$o/trace.json.gz" > "$o/stats.txt"
head -12 "$o/stats.txt" | indent

# --- 4. journey: an allocator snapshot with its history ---
step 4 "an allocator snapshot with its history: $cs demo --snapshot $o/snapshot.pickle"
"$cs" demo --iterations 20 --kernel-ms 2 --snapshot "$o/snapshot.pickle" > "$o/snapshot-demo.log"
grep -E "^ran |snapshot written" "$o/snapshot-demo.log" | indent
echo "      $cs snapshot-stats $o/snapshot.pickle:"
"$cs" snapshot-stats "$o/snapshot.pickle" | indent

# --- 5. journey: metrics for Prometheus ---
port_in_use() { (exec 3<> "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
port=9401
while port_in_use $port; do port=$((port + 1)); done
step 5 "metrics: CUDASCOPE_METRICS=127.0.0.1:$port $cs demo --hold 20, scraped once"
CUDASCOPE_METRICS=127.0.0.1:$port "$cs" demo --iterations 40 --kernel-ms 2 --hold 20 > "$out/metrics-demo.log" 2>&1 &
program=$!
# Scrape while the program holds its last steps' memory (bash's /dev/tcp: no curl needed).
scrape() {
  exec 3<> "/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  sed '1,/^\r*$/d' <&3 > "$out/metrics.txt"
  exec 3<&-
  [ -s "$out/metrics.txt" ]
}
for _ in $(seq 100); do
  if grep -q "^holding" "$out/metrics-demo.log" 2> /dev/null && scrape 2> /dev/null; then break; fi
  kill -0 $program 2> /dev/null || break
  sleep 0.1
done
kill -TERM $program 2> /dev/null || true
wait $program || true
if [ -s "$out/metrics.txt" ]; then
  echo "      http://127.0.0.1:$port/metrics answered $(grep -c '^cudascope_' "$out/metrics.txt") cudascope_* samples" \
    "(all in $o/metrics.txt); a few:"
  grep -E '^cudascope_(device_info|memory_(allocated|reserved)_bytes|memory_allocations_total)[{ ]' "$out/metrics.txt" |
    grep -E 'device_info|pool="all"' | head -8 | indent
else
  echo "      no metrics were served (see $o/metrics-demo.log):"
  tail -5 "$out/metrics-demo.log" | indent
fi

# --- 6. the viewer ---
viewer_note=""
if [ -n "${DEMO_NO_VIEWER:-}" ]; then
  viewer_note="(DEMO_NO_VIEWER is set: the viewer was not built)"
else
  step 6 "building the viewer (Qt 6)"
  t=$SECONDS
  if "$root/scripts/install-deps.sh" qt6-base-dev > "$out/viewer-packages.log" 2>&1; then
    cmake "$build" > "$out/configure-viewer.log" 2>&1
    if ninja -C "$build" -t query cudascope_viewer > /dev/null 2>&1; then
      build_targets cudascope_viewer || viewer_note="(the viewer did not build: see $(shown "$out/build.log"))"
    else
      viewer_note="(Qt 6 was not found: the viewer was not built)"
    fi
  else
    viewer_note="(qt6-base-dev could not be installed: the viewer was not built)"
  fi
  done_in $t
fi

cat << EOF

The demo's files are in $o/. Next steps:
  Open the snapshot and the trace in the viewer (it needs a display)${viewer_note:+ $viewer_note}:
    $cs view $o/snapshot.pickle
    $cs view $o/trace.json.gz
  (the trace also opens in https://ui.perfetto.dev or chrome://tracing)
  Serve a program's metrics and point Prometheus at it:
    CUDASCOPE_METRICS=0.0.0.0:9401 ./your_program      # or: $cs demo --hold 600
  prometheus.yml:
    scrape_configs:
      - job_name: cudascope
        scrape_interval: 5s
        static_configs:
          - targets: ["localhost:9401"]
  Grafana: import exporters/grafana/cudascope-dashboard.json
demo finished in $((SECONDS - started)) s
EOF
