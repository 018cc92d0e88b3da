#!/bin/sh
# Runs a window test under a private virtual X server. When no X server can be started the
# test is reported skipped, with the reason, never passed.
test_binary="$1"
shift
screen="-screen 0 1600x1000x24"
if ! command -v xvfb-run >/dev/null 2>&1; then
  echo "[  SKIPPED ] xvfb-run not found (apt-get install xvfb): no X server for the window test"
  exit 0
fi
if ! probe=$(xvfb-run -a -s "$screen" true 2>&1); then
  echo "[  SKIPPED ] cannot start an X server with xvfb-run: $probe"
  exit 0
fi
exec xvfb-run -a -s "$screen" "$test_binary" "$@"
