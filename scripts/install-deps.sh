#!/usr/bin/env bash
# Installs the Debian 12 packages cudascope builds and tests with, if any are missing; with
# arguments, only those packages (the demo installs its smaller set).
# The CUDA toolkit is expected at /usr/local/cuda (without it, only the sim backend builds).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config python3
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  nlohmann-json3-dev libsimdjson-dev zlib1g-dev
  qt6-base-dev xvfb xauth
  prometheus-cpp-dev prometheus
  dpkg-dev file
)

if [ $# -gt 0 ]; then packages=("$@"); fi

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then sudo="sudo"; else
    echo "install-deps: missing packages ${missing[*]} and not root (no sudo): install them first" >&2
    exit 1
  fi
fi
echo "install-deps: installing ${missing[*]}" >&2
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
