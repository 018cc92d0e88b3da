#!/usr/bin/env bash
# The GPU run behind bench/results/tensor.md: builds the runtime and its tensor, RNG and host
# allocator tests for sm_90, runs them (and runtime_test) on the cuda backend, then compares
# RNG numbers and copy bandwidth with torch on the same GPU, and (with two GPUs) the comm
# collectives with torch.cuda.comm. Logs go to OUT_DIR.
# Usage: bench/torch_compare/run_on_gpu.sh SRC_DIR BUILD_DIR OUT_DIR
set -uo pipefail
src=${1:?usage: run_on_gpu.sh SRC_DIR BUILD_DIR OUT_DIR}
build=${2:?usage}
out=${3:?usage}
mkdir -p "$out"
{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)"
  date -u
} >"$out/machine.txt" 2>&1
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDASCOPE_WITH_GUI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCUDASCOPE_BUILD_BENCH=OFF >"$out/build.txt" 2>&1 &&
  cmake --build "$build" -j16 --target cudascope_runtime tensor_test random_test host_allocator_test runtime_test \
    >>"$out/build.txt" 2>&1 || { tail -50 "$out/build.txt"; exit 1; }
export CUDASCOPE_BACKEND=cuda
for t in tensor_test random_test host_allocator_test runtime_test; do
  echo "== $t"; "$build/tests/runtime/$t" --gtest_brief=1 2>&1 | tail -40; echo "exit ${PIPESTATUS[0]}"
done >"$out/tests.txt" 2>&1
for p in rng_dump copy_bandwidth comm_dump; do
  g++ -std=c++20 -O2 -I "$src/runtime/include" -I "$build/runtime/include" "$src/bench/torch_compare/$p.cpp" \
    -o "$build/$p" -L "$build/lib" -lcudascope_runtime -Wl,-rpath,"$build/lib" >>"$out/build.txt" 2>&1
done
python3 "$src/bench/torch_compare/rng_check.py" --rng-dump "$build/rng_dump" >"$out/rng_check.txt" 2>&1
python3 "$src/bench/torch_compare/copy_check.py" --copy-bandwidth "$build/copy_bandwidth" >"$out/copy_check.txt" 2>&1
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then  # torch.cuda.comm against ours needs two GPUs
  python3 "$src/bench/torch_compare/comm_check.py" --comm-dump "$build/comm_dump" >"$out/comm_check.txt" 2>&1
  cat "$out/comm_check.txt"
fi
python3 -c "import torch; t = torch.empty(1000, pin_memory=True); del t; torch.cuda.synchronize();
print(sorted(torch.cuda.host_memory_stats().keys())); print(torch._C._cuda_hostMemoryStats())" \
  >"$out/torch_host_stats_keys.txt" 2>&1
tail -n 3 "$out/tests.txt" "$out/rng_check.txt"; cat "$out/copy_check.txt"
