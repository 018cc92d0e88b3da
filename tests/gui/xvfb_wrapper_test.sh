#!/bin/sh
# The window-test wrapper reports what happened: a failing test fails even when a sibling
# test skipped, a test binary that only skipped is skipped (77), a passing one passes.
# A stand-in xvfb-run runs the command directly, so this needs no X server.
wrapper="$(dirname "$0")/run_under_xvfb.sh"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/xvfb-run" <<'STUB'
#!/bin/sh
# xvfb-run -a -s "SCREEN" COMMAND...: drop the options, run the command.
shift; shift; shift
exec "$@"
STUB
binary() {  # binary NAME EXIT_STATUS LINE...
  name="$1" status="$2"
  shift 2
  { echo '#!/bin/sh'; for line in "$@"; do echo "echo '$line'"; done; echo "exit $status"; } >"$dir/$name"
  chmod +x "$dir/xvfb-run" "$dir/$name"
}
binary skip_and_fail 1 '[  SKIPPED ] GuiWindowTest.A' '[  FAILED  ] GuiWindowTest.B'
binary all_skipped 0 '[  SKIPPED ] GuiWindowTest.A' '[  SKIPPED ] GuiWindowTest.B'
binary skip_and_pass 0 '[  SKIPPED ] GuiWindowTest.A' '[       OK ] GuiWindowTest.B (5 ms)'
binary exits_77 77 '[  FAILED  ] GuiWindowTest.A'
failures=0
expect() {  # expect NAME STATUS
  XVFB_RUN="$dir/xvfb-run" "$wrapper" "$dir/$1" >/dev/null 2>&1
  got=$?
  if [ "$got" -ne "$2" ]; then
    echo "FAIL: $1 gave exit status $got, expected $2"
    failures=$((failures + 1))
  else
    echo "ok: $1 -> $got"
  fi
}
expect skip_and_fail 1
expect all_skipped 77
expect skip_and_pass 0
expect exits_77 1
XVFB_RUN="$dir/no-such-xvfb-run" "$wrapper" "$dir/skip_and_pass" >/dev/null 2>&1
got=$?
[ "$got" -eq 77 ] && echo "ok: no xvfb-run -> 77" || { echo "FAIL: no xvfb-run gave $got, expected 77"; failures=$((failures + 1)); }
exit "$failures"
