#!/usr/bin/env bash
# For a machine that lacks the Debian -dev packages cudascope builds with (a GPU machine of
# another distribution, say): unpacks every .deb in DIR into PREFIX without installing them,
# and prints the exports that point CMake and the loader there.
# Usage: eval "$(scripts/unpack-debs.sh DIR [PREFIX])"     (PREFIX defaults to /tmp/cudascope-deps)
set -euo pipefail
dir=${1:?usage: unpack-debs.sh DIR [PREFIX]}
prefix=${2:-/tmp/cudascope-deps}
shopt -s nullglob
debs=("$dir"/*.deb)
[ ${#debs[@]} -gt 0 ] || { echo "unpack-debs: no .deb files in '$dir'" >&2; exit 1; }
mkdir -p "$prefix"
for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$prefix"; done
echo "export CMAKE_PREFIX_PATH=$prefix/usr\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
echo "export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
