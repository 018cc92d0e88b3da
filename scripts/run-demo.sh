#!/usr/bin/env bash
# The main job: installs what is missing, builds, and runs `cudascope demo` (on the GPU when
# there is one, else on the simulated device), then lists the devices.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
"${BUILD_DIR:-$root/build}/cli/cudascope" demo "$@"
