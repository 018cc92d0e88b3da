#!/usr/bin/env bash
# Installs the build into a scratch prefix and uses it as a user would, with no
# LD_LIBRARY_PATH: the installed `cudascope` (--version, replay, snapshot-stats, the metrics
# library beside the runtime), and a project that links every exported target.
# Usage: installed_prefix_test.sh BUILD_DIR WORK_DIR VERSION TARGETS GENERATOR (TARGETS: runtime,profiler,...)
set -uo pipefail
source "$(dirname "$0")/installed_checks.sh" || { echo "FAIL: cannot read installed_checks.sh" >&2; exit 1; }
build_dir=$1 work=$2 version=$3 targets=$4 generator=$5
data=$package_test_dir/../data

rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
"$cmake" --install "$build_dir" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
  fail "cmake --install $build_dir failed: $(tail -20 "$work/install.log")"
echo "ok: installed into $work/prefix ($(wc -l <"$work/install.log") files)"

check_run_paths "$work/prefix" "$build_dir"
check_cli "$work/prefix/bin/cudascope" "$version" "$data" "$work/cli"
# A prefix of one's own is not on python3's path (/usr/local's folder is): given that folder.
check_python_module "$(dirname "$(find "$work/prefix" -name libcudascope_torch_allocator.so | head -1)")" \
  "$(dirname "$(find "$work/prefix" -path '*-packages/cudascope_torch.py' | head -1)")"
[ ! -e "$work/prefix/bin/cudascope-viewer" ] || check_viewer "$work/prefix/bin/cudascope-viewer"
check_consumer "$package_test_dir/consumer" "$work" "$generator" "$targets" "$data" "$work/prefix"
exit 0
