#!/usr/bin/env bash
# scripts/run-gpu-suite.sh without a GPU (--dry-run): every stage it runs by default exists,
# every stage is in its usage, and a name that is no stage is refused with exit 2 before any
# stage runs. A stage lost to an edit otherwise shows only on a GPU machine, as a refused run.
#   gpu_suite_stages_test.sh SUITE
set -u
suite=$1
OUT=$(mktemp -d)
export OUT
trap 'rm -rf "$OUT"' EXIT
fail=0
problem() { echo "FAIL: $*"; fail=1; }

"$suite" --dry-run >"$OUT/default.log" 2>&1 || problem "the default stages: $(cat "$OUT/default.log")"
mapfile -t stages < <(grep -o '^stage_[a-z0-9_]*()' "$suite" | sed 's/^stage_//; s/()$//')
[ ${#stages[@]} -gt 0 ] || problem "no stage_ function found in $suite"
"$suite" --dry-run "${stages[@]}" >"$OUT/named.log" 2>&1 || problem "the stages by name: $(cat "$OUT/named.log")"
for stage in "${stages[@]}"; do
  grep -qE "^#   $stage( |$)" "$suite" || problem "stage $stage is not in the usage"
done
for stage in $(sed -n 's/.*|| stages=(\(.*\))$/\1/p' "$suite"); do
  [[ " ${stages[*]} " == *" $stage "* ]] || problem "default stage $stage has no function"
done
"$suite" --dry-run journey2 no_such_stage >"$OUT/refused.log" 2>&1
rc=$?
[ $rc -eq 2 ] || problem "an unknown stage gave exit $rc, not 2"
grep -q "no stage 'no_such_stage'" "$OUT/refused.log" || problem "the unknown stage is not named: $(cat "$OUT/refused.log")"
[ ! -e "$OUT/results.txt" ] || problem "a dry run wrote results"
[ $fail -eq 0 ] && echo "PASS: ${#stages[@]} stages, the default ones among them, each in the usage"
exit $fail
