# Checks shared by the package tests, sourced by installed_prefix_test.sh and
# debian_package_test.sh. Every failed check exits 1: the skip code (77) is reserved for the
# skip path, so a failure can never be reported as skipped.

package_test_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cmake=${CMAKE:-cmake}

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The caller's library path without any folder that holds a library of ours: where a machine
# has its dependencies unpacked rather than installed (a GPU machine of another distribution),
# the loader finds them as the user's programs do there; ours must be found by run path alone.
foreign_library_path() {
  local dir kept=()
  IFS=: read -ra dirs <<<"${LD_LIBRARY_PATH:-}"
  for dir in "${dirs[@]}"; do
    [ -n "$dir" ] && ! compgen -G "$dir/libcudascope_*" >/dev/null && kept+=("$dir")
  done
  (IFS=:; echo "${kept[*]}")
}
kept_library_path=$(foreign_library_path)
[ -z "$kept_library_path" ] || echo "note: the caller's LD_LIBRARY_PATH is kept for other libraries: $kept_library_path"

# A clean environment: no CMAKE_PREFIX_PATH or CUDASCOPE_* from the caller, no library path
# that could find ours.
clean() {
  env -i PATH=/usr/bin:/bin ${kept_library_path:+LD_LIBRARY_PATH=$kept_library_path} "$@"
}

# check_run_paths DIR BUILD_DIR: no installed ELF file under DIR names the build tree, and the
# loader resolves every library each one needs without help from the environment.
check_run_paths() {
  local dir=$1 build_dir=$2 file runpath count=0
  while IFS= read -r file; do
    runpath=$(readelf -d "$file" 2>/dev/null | sed -n 's/.*(\(RUNPATH\|RPATH\)).*\[\(.*\)\]/\2/p')
    case "$runpath" in
      *"$build_dir"*) fail "$file carries the build tree in its run path: $runpath" ;;
    esac
    if clean ldd "$file" | grep -q "not found"; then
      fail "$file needs libraries the loader cannot find: $(clean ldd "$file" | grep "not found")"
    fi
    count=$((count + 1))
  done < <(find "$dir" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c 'head -c 4 "$1" | grep -q ELF' _ {} \; -print)
  [ "$count" -gt 0 ] || fail "no ELF files found under $dir"
  echo "ok: $count installed ELF files, none with a run path into $build_dir or a library missing"
}

# check_cli CLI VERSION DATA_DIR WORK_DIR: the installed command runs in a clean environment
# and gives the answers the test data holds.
check_cli() {
  local cli=$1 version=$2 data=$3 work=$4 out
  mkdir -p "$work" || fail "cannot create $work"

  out=$(clean "$cli" --version 2>&1) || fail "$cli --version exited non-zero: $out"
  [ "$out" = "cudascope $version" ] || fail "$cli --version printed '$out', expected 'cudascope $version'"
  echo "ok: $cli --version -> $out"

  clean "$cli" replay "$data/replay_default_s1.jsonl.gz" >"$work/replay.json" 2>"$work/replay.err" ||
    fail "$cli replay exited non-zero: $(cat "$work/replay.err")"
  python3 "$package_test_dir/compare_stats.py" "$work/replay.json" "$data/replay_default_s1.stats.json.gz" ||
    fail "$cli replay: memory_stats differ from replay_default_s1.stats.json.gz"

  # The installed program's snapshot names its own static functions: the package kept the
  # symbol tables when it dropped the debug information.
  clean CUDASCOPE_BACKEND=sim "$cli" demo --iterations 2 --kernel-ms 1 --snapshot "$work/demo.json" \
    >"$work/demo.out" 2>&1 || fail "$cli demo --snapshot exited non-zero: $(cat "$work/demo.out")"
  grep -q '::run_demo(' "$work/demo.json" ||
    fail "$cli demo's snapshot does not name run_demo (a stripped symbol table?): $(head -c 300 "$work/demo.json")"
  echo "ok: the installed demo's snapshot names its own functions"

  clean "$cli" snapshot-stats "$data/snap_small.json" --json >"$work/snapshot.json" 2>"$work/snapshot.err" ||
    fail "$cli snapshot-stats exited non-zero: $(cat "$work/snapshot.err")"
  python3 "$package_test_dir/compare_stats.py" "$work/snapshot.json" "$data/snap_small.stats.json" --common ||
    fail "$cli snapshot-stats: figures differ from snap_small.stats.json"

  # The runtime loads the metrics library from beside itself (CUDASCOPE_METRICS); port 0
  # lets the system pick a free one.
  clean CUDASCOPE_METRICS=127.0.0.1:0 "$cli" replay "$data/replay_default_s1.jsonl.gz" >/dev/null 2>"$work/metrics.err" ||
    fail "$cli replay with CUDASCOPE_METRICS exited non-zero: $(cat "$work/metrics.err")"
  grep -q "serving this process's metrics" "$work/metrics.err" ||
    fail "the installed runtime did not start its metrics library: $(cat "$work/metrics.err")"
  echo "ok: CUDASCOPE_METRICS started the installed metrics library"

  # `run` finds the injection library in the installed lib dir and records a program.
  clean "$cli" run -o "$work/run-trace.json" -- "$cli" replay "$data/replay_default_s1.jsonl.gz" \
    >/dev/null 2>"$work/run.err" || fail "$cli run exited non-zero: $(cat "$work/run.err")"
  out=$(clean "$cli" stats "$work/run-trace.json" 2>&1) || fail "$cli stats exited non-zero: $out"
  echo "$out" | grep -Eq "^Trace \(cudascope\): [1-9][0-9]* events, complete" ||
    fail "$cli run recorded no complete trace: $out"
  echo "ok: $cli run recorded through the installed injection library: $(echo "$out" | grep '^Trace')"
}

# check_viewer VIEWER: the installed viewer starts (Qt and the project's libraries load) and
# answers --help, on the offscreen platform.
check_viewer() {
  local viewer=$1 out
  out=$(clean QT_QPA_PLATFORM=offscreen "$viewer" --help 2>&1) || fail "$viewer --help exited non-zero: $out"
  echo "$out" | grep -q "^Usage: .*cudascope-viewer" || fail "$viewer --help printed no usage: $out"
  echo "ok: $viewer starts and prints its usage"
}

# check_consumer SOURCE_DIR WORK_DIR GENERATOR TARGETS DATA_DIR [PREFIX] (TARGETS: a,b,c): a user's project
# finds the installed package (in PREFIX, else the system's), links every exported target,
# builds and runs, all in a clean environment.
check_consumer() {
  local source=$1 work=$2 generator=$3 targets=$4 data=$5 prefix=${6:-}
  local args=(-S "$source" -B "$work/consumer" -G "$generator" "-DCUDASCOPE_EXPECTED_TARGETS=${targets//,/;}")
  # The build tool the build used (it may not be on the clean PATH), and the caller's prefixes
  # that hold no cudascope of their own (a machine's unpacked dependencies), as for libraries.
  [ -n "${MAKE_PROGRAM:-}" ] && args+=("-DCMAKE_MAKE_PROGRAM=$MAKE_PROGRAM")
  local prefixes=() dir
  [ -n "$prefix" ] && prefixes+=("$prefix")
  IFS=: read -ra dirs <<<"${CMAKE_PREFIX_PATH:-}"
  for dir in "${dirs[@]}"; do
    [ -n "$dir" ] && ! compgen -G "$dir/lib*/cmake/cudascope" >/dev/null && prefixes+=("$dir")
  done
  [ ${#prefixes[@]} -gt 0 ] && args+=("-DCMAKE_PREFIX_PATH=$(IFS=';'; echo "${prefixes[*]}")")
  clean "$cmake" "${args[@]}" >"$work/consumer-configure.log" 2>&1 ||
    fail "configuring the consumer failed: $(tail -20 "$work/consumer-configure.log")"
  grep "consumer: cudascope" "$work/consumer-configure.log"
  clean "$cmake" --build "$work/consumer" >"$work/consumer-build.log" 2>&1 ||
    fail "building the consumer failed: $(tail -30 "$work/consumer-build.log")"
  clean "$work/consumer/consumer" "$data/snap_small_p5.pickle" "$work/consumer-trace.json" ||
    fail "the consumer failed"
  echo "ok: the consumer linked cudascope::{$targets} and ran"
}

# check_python_module LIBDIR [PYTHONPATH]: python3 imports cudascope_torch from where the install
# put its loader (no PYTHONPATH for a system prefix) and finds the allocator library in LIBDIR.
check_python_module() {
  local libdir=$1 path=${2:-} out
  command -v python3 >/dev/null || { echo "note: no python3 here: cudascope_torch's import not checked"; return 0; }
  out=$(clean ${path:+PYTHONPATH=$path} python3 -c 'import cudascope_torch; print(cudascope_torch.library_path())' 2>&1) ||
    fail "python3 cannot import cudascope_torch${path:+ from $path}: $out"
  [ "$(readlink -f "$out")" = "$(readlink -f "$libdir/libcudascope_torch_allocator.so")" ] ||
    fail "cudascope_torch found its library at '$out', not in $libdir"
  echo "ok: python3 imports cudascope_torch${path:+ (from $path)}; its library is $out"
}
