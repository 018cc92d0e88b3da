#!/usr/bin/env bash
# The jiterator's GPU check: builds the runtime and jiterator_test, runs the tests on the cuda
# backend (NVRTC, cudaLibraryLoadData, cudaLaunchKernel), then compares results and timings
# with torch.cuda.jiterator on the same code strings (jiterator_check.py). Logs go to OUT_DIR.
# Usage: bench/jiterator/run_on_gpu.sh SRC_DIR BUILD_DIR OUT_DIR
set -uo pipefail
src=${1:?usage: run_on_gpu.sh SRC_DIR BUILD_DIR OUT_DIR}
build=${2:?usage: run_on_gpu.sh SRC_DIR BUILD_DIR OUT_DIR}
out=${3:?usage: run_on_gpu.sh SRC_DIR BUILD_DIR OUT_DIR}
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  date -u
} >"$out/machine.txt" 2>&1
[ -f "$build/build.ninja" ] || cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDASCOPE_WITH_GUI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCUDASCOPE_BUILD_BENCH=OFF >"$out/build.txt" 2>&1
cmake --build "$build" -j16 --target cudascope_runtime jiterator_test >>"$out/build.txt" 2>&1 ||
  { tail -50 "$out/build.txt"; exit 1; }
CUDASCOPE_BACKEND=cuda "$build/tests/runtime/jiterator_test" 2>&1 | tee "$out/tests.txt" | tail -30
g++ -std=c++20 -O2 -I "$src/runtime/include" -I "$build/runtime/include" "$src/bench/jiterator/jiterator_dump.cpp" \
  -o "$build/jiterator_dump" -L "$build/lib" -lcudascope_runtime -Wl,-rpath,"$build/lib" >>"$out/build.txt" 2>&1 ||
  { tail -20 "$out/build.txt"; exit 1; }
CUDASCOPE_BACKEND=cuda "$build/jiterator_dump" --time >"$out/cudascope.json" || exit 1
python3 "$src/bench/jiterator/jiterator_check.py" --json "$out/cudascope.json" 2>&1 | tee "$out/check.txt"
