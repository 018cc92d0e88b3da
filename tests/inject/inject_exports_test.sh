#!/usr/bin/env bash
# libcudascope_inject.so, loaded into other people's programs (PyTorch), exports its entry
# points and nothing else (inject/inject_exports.map): no C++ name, and above all no
# instantiation of the standard library's templates from the static archives it links (the
# analysis), which would serve the program's own std::string members.
# Usage: inject_exports_test.sh LIBRARY     Exits 1, naming what differs, on any failure.
set -uo pipefail
export LC_ALL=C  # one collation for sort and comm
lib=${1:?usage: inject_exports_test.sh path/to/libcudascope_inject.so}
expected=$(printf '%s\n' InitializeInjection InitializeInjectionNvtx2 InitializeInjectionNvtxExtension cudascope_sim_attach)

# Defined dynamic symbols (the version nodes' own names, type A, left out; a name with
# @VERSION counts under its bare name).
exported=$(nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sed 's/@.*//' | grep -Ev '^(_init|_fini)$' | sort -u)
[ -n "$exported" ] || { echo "FAIL: nm -D found no exported names in $lib"; exit 1; }
extra=$(comm -13 <(sort <<<"$expected") <(echo "$exported"))
missing=$(comm -23 <(sort <<<"$expected") <(echo "$exported"))
failed=0
if [ -n "$extra" ]; then
  echo "FAIL: $lib exports $(wc -l <<<"$extra") names besides its entry points; $(c++filt <<<"$extra" | grep -cE '^(std|__gnu_cxx)::') of them members of std:: or __gnu_cxx:::"
  c++filt <<<"$extra" | head -20 | sed 's/^/  /'
  failed=1
fi
if [ -n "$missing" ]; then
  echo "FAIL: $lib does not export the entry points $(tr '\n' ' ' <<<"$missing")"
  failed=1
fi
# The entry points are functions: the driver, NVTX and the sim call them.
not_code=$(nm -D --defined-only "$lib" | awk '$2 != "T" && $2 != "A" {print $3}' | sed 's/@.*//' | grep -Fx -f <(echo "$expected"))
[ -z "$not_code" ] || { echo "FAIL: not functions in $lib: $not_code"; failed=1; }
[ $failed -ne 0 ] || echo "ok: $lib exports exactly $(tr '\n' ' ' <<<"$expected")"
exit $failed
