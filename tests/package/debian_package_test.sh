#!/usr/bin/env bash
# Builds the Debian packages (cpack -G DEB), installs them with apt from the local files
# only, uses the installed /usr/bin/cudascope and builds a project against /usr, then purges
# the packages and checks nothing is left. Needs root and apt: otherwise it exits 77, which
# ctest reports as skipped; every failure exits 1 (installed_checks.sh).
# Usage: debian_package_test.sh BUILD_DIR WORK_DIR VERSION TARGETS GENERATOR (TARGETS: runtime,profiler,...)
set -uo pipefail
source "$(dirname "$0")/installed_checks.sh" || { echo "FAIL: cannot read installed_checks.sh" >&2; exit 1; }
build_dir=$1 work=$2 version=$3 targets=$4 generator=$5
data=$package_test_dir/../data
cpack=${CPACK:-cpack}

skip() {
  echo "SKIPPED: $*"
  exit 77
}
[ "$(id -u)" -eq 0 ] || skip "installing a .deb needs root (running as uid $(id -u))"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || skip "no apt-get/dpkg-deb on this machine"

rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"
start=$(date +%s)
"$cpack" -G DEB --config "$build_dir/CPackConfig.cmake" -B "$work/packages" >"$work/cpack.log" 2>&1 ||
  fail "cpack -G DEB failed: $(tail -30 "$work/cpack.log")"
mapfile -t debs < <(find "$work/packages" -maxdepth 1 -name '*.deb' | sort)
echo "ok: cpack built ${#debs[@]} packages in $(($(date +%s) - start)) s"

# The package set and what each declares.
declare -A depends
packages=()
for deb in "${debs[@]}"; do
  name=$(dpkg-deb -f "$deb" Package) || fail "$deb is not a Debian package"
  depends[$name]=$(dpkg-deb -f "$deb" Depends)
  packages+=("$name")
  echo "    $(basename "$deb"): Depends: ${depends[$name]}"
done
for name in libcudascope0 libcudascope-dev cudascope; do
  [ -n "${depends[$name]+x}" ] || fail "no $name package among: ${packages[*]}"
done
full_version="$version-1"
expect_depends() {
  [[ ", ${depends[$1]}," == *", $2"[,\ ]* ]] || fail "$1 does not depend on '$2': Depends: ${depends[$1]}"
}
expect_depends libcudascope0 libc6              # found by dpkg-shlibdeps
expect_depends libcudascope0 libstdc++6
expect_depends cudascope "libcudascope0 (= $full_version)"
expect_depends libcudascope-dev "libcudascope0 (= $full_version)"
expect_depends libcudascope-dev zlib1g-dev      # cudascopeConfig.cmake's find_dependency()
expect_depends libcudascope-dev libsimdjson-dev
echo "ok: dependencies declared"
for deb in "${debs[@]}"; do
  dpkg-deb -x "$deb" "$work/contents" || fail "cannot unpack $deb"
done
check_run_paths "$work/contents" "$build_dir"

# Leftovers of an earlier run of this test (killed before its purge) are purged; any other
# cudascope installation is not this test's to remove.
for name in "${packages[@]}"; do
  installed=$(dpkg-query -W -f='${Status} ${Version}' "$name" 2>/dev/null)
  case "$installed" in
    "") ;;
    *"not-installed"*|*"config-files"*) ;;
    *" $full_version") apt-get purge -y -q "$name" >/dev/null 2>&1 || fail "cannot purge the leftover $name" ;;
    *) fail "$name is already installed ($installed); remove it before running this test" ;;
  esac
done

# Purges those of our packages dpkg knows as installed.
purge() {
  local name present=()
  for name in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$name" 2>/dev/null | grep -q "ok installed" && present+=("$name")
  done
  [ ${#present[@]} -eq 0 ] && return 0
  DEBIAN_FRONTEND=noninteractive apt-get purge -y -q "${present[@]}" >"$work/purge.log" 2>&1
}
on_exit() {
  local status=$?
  purge || { echo "FAIL: purging ${packages[*]} failed: $(tail -10 "$work/purge.log")" >&2; exit 1; }
  exit "$status"
}
trap on_exit EXIT

# A machine whose build dependencies are unpacked rather than installed (a GPU machine of
# another distribution) cannot install the packages without the network: skipped, naming them.
missing=()
for name in "${packages[@]}"; do
  while read -r dep; do
    dep=${dep%% *}
    [[ -z "$dep" || " ${packages[*]} " == *" $dep "* ]] && continue
    dpkg-query -W -f='${Status}' "$dep" 2>/dev/null | grep -q "ok installed" || missing+=("$dep")
  done < <(tr ',|' '\n\n' <<<"${depends[$name]}" | sed 's/^ *//')
done
[ ${#missing[@]} -eq 0 ] ||
  skip "declared dependencies not installed here: $(printf '%s\n' "${missing[@]}" | sort -u | xargs) (the build's own dependencies are not installed packages on this machine)"

# Every dependency is a build dependency, already installed: apt must install our packages
# and nothing else, so it never reaches for the network (a dry run proves it first; apt's
# --no-download refuses local .deb files).
apt-get install -s -q --no-install-recommends "${debs[@]}" >"$work/apt-plan.log" 2>&1 ||
  fail "apt-get install -s failed: $(tail -30 "$work/apt-plan.log")"
mapfile -t planned < <(sed -n 's/^Inst \([^ ]*\) .*/\1/p' "$work/apt-plan.log" | sort)
[ "${planned[*]}" = "$(printf '%s\n' "${packages[@]}" | sort | xargs)" ] ||
  fail "apt would install more than our packages (${planned[*]}): a declared dependency is not installed"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${debs[@]}" \
  >"$work/apt-install.log" 2>&1 || fail "apt-get install failed: $(tail -30 "$work/apt-install.log")"
echo "ok: apt-get installed ${packages[*]}"
[ "$(command -v cudascope)" = /usr/bin/cudascope ] || fail "cudascope is not /usr/bin/cudascope after installing"

check_cli /usr/bin/cudascope "$version" "$data" "$work/cli"
check_python_module "$(dirname "$(dpkg -L libcudascope0 | grep '/libcudascope_torch_allocator.so$' | head -1)")"
[ -z "${depends[cudascope-viewer]+x}" ] || check_viewer /usr/bin/cudascope-viewer
check_consumer "$package_test_dir/consumer" "$work" "$generator" "$targets" "$data"

purge || fail "purging ${packages[*]} failed: $(tail -10 "$work/purge.log")"
for name in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$name" 2>/dev/null)
  [ -z "$status" ] || [[ "$status" == *not-installed* ]] || fail "$name is still known to dpkg after purge: $status"
done
for path in /usr/bin/cudascope /usr/lib/cmake/cudascope /usr/include/cudascope; do
  [ ! -e "$path" ] || fail "$path is left after purge"
done
echo "ok: purged, nothing left"
exit 0
