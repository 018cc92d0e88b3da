#!/bin/sh
# Runs a window test under a private virtual X server and reports its outcome to ctest:
# the test's own exit status when it fails, 77 (SKIP_RETURN_CODE: skipped) when no X server
# can be started or when every test in it skipped, 0 when it ran and passed. A skip message
# never hides a failure. XVFB_RUN names the xvfb-run to use (default: the one on PATH).
test_binary="$1"
shift
xvfb_run="${XVFB_RUN:-xvfb-run}"
screen="-screen 0 1600x1000x24"
if ! command -v "$xvfb_run" >/dev/null 2>&1; then
  echo "[  SKIPPED ] xvfb-run not found (apt-get install xvfb): no X server for the window test"
  exit 77
fi
if ! probe=$("$xvfb_run" -a -s "$screen" true 2>&1); then
  echo "[  SKIPPED ] cannot start an X server with xvfb-run: $probe"
  exit 77
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$xvfb_run" -a -s "$screen" "$test_binary" "$@" >"$log" 2>&1
status=$?
cat "$log"
if [ "$status" -ne 0 ]; then
  # 77 would read as skipped: any failure is reported as one.
  [ "$status" -eq 77 ] && status=1
  exit "$status"
fi
if grep -q '^\[  SKIPPED \]' "$log" && ! grep -q '^\[       OK \]' "$log"; then
  exit 77
fi
exit 0
