#!/usr/bin/env bash
# Every shared library under DIR (an install prefix, or a build's lib/) is safe inside someone
# else's process: it exports its own API only (C++ names in namespace cudascope, C entry
# points named cudascope_*, the CUDA and NVTX injection entry points; libcudascope_inject.so
# its C entry points alone), no definition of the
# standard library's (std::, __gnu_cxx::, a static libstdc++'s), and it needs libstdc++.so.6
# and nothing outside the libraries it is meant to load (never libcudart.so or libcuda.so:
# the CUDA runtime is linked statically, the driver opened at run time).
# Usage: exported_symbols_check.sh DIR     Prints one line per library; exits 1 on any failure.
set -uo pipefail
dir=${1:?usage: exported_symbols_check.sh DIR}
own_cxx='^((typeinfo|typeinfo name|vtable|VTT|guard variable|construction vtable) for |(non-)?virtual thunk to )?cudascope::'
own_c='^(cudascope_[A-Za-z0-9_]+|InitializeInjection|InitializeInjectionNvtx2|InitializeInjectionNvtxExtension)$'
# The loader's names: the C library, libgcc, libstdc++, our own libraries and what they load
# on purpose (CUPTI, zlib, simdjson, prometheus-cpp).
allowed_needed='^(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux-x86-64|ld-linux-aarch64|libcudascope_[a-z_]+|libcupti|libz|libsimdjson|libprometheus-cpp-[a-z]+)\.so(\.[0-9.]+)?$'

failed=0
libraries=$(find "$dir" -name '*.so*' -type f | sort)
[ -n "$libraries" ] || { echo "FAIL: no shared libraries under $dir"; exit 1; }
for lib in $libraries; do
  head -c 4 "$lib" | grep -q ELF || continue
  problems=()
  needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  grep -qx 'libstdc++.so.6' <<<"$needed" || problems+=("does not need libstdc++.so.6 (a static copy of libstdc++ inside?)")
  unexpected=$(grep -Ev "$allowed_needed" <<<"$needed" | tr '\n' ' ')
  [ -z "$unexpected" ] || problems+=("needs $unexpected")
  # Defined dynamic symbols, names demangled (the version nodes' own names left out).
  exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | sort -u)
  # The injection library is linked against by nothing: its entry points only, no C++ name
  # (inject/inject_exports.map).
  lib_cxx=$own_cxx
  [ "$(basename "$lib")" != libcudascope_inject.so ] || lib_cxx='^$'
  foreign=$(grep -Ev "$own_c" <<<"$exported" | grep -v '^_Z' ; grep '^_Z' <<<"$exported" | c++filt | grep -Ev "$lib_cxx")
  foreign=$(grep -Ev '^(_init|_fini|)$' <<<"$foreign")
  std_count=$(grep -cE '(^| )(std|__gnu_cxx)::' <<<"$foreign")
  if [ -n "$foreign" ]; then
    problems+=("exports $(wc -l <<<"$foreign") names outside its API ($std_count of std:: or __gnu_cxx::), e.g. $(head -3 <<<"$foreign" | tr '\n' ';')")
  fi
  if [ ${#problems[@]} -eq 0 ]; then
    echo "ok: $lib exports $(wc -l <<<"$exported") names of its own; needs $(tr '\n' ' ' <<<"$needed")"
  else
    failed=1
    for p in "${problems[@]}"; do echo "FAIL: $lib $p"; done
  fi
done
exit $failed
