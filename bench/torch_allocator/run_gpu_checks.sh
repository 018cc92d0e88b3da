#!/usr/bin/env bash
# The GPU verification of libcudascope_torch_allocator.so: the training loop under PyTorch's
# allocator and cudascope's for three configurations, the per-op cost, the snapshot of a run
# (NVTX phases), the metrics endpoint mid-run, an OOM on purpose, and CUDA-graph capture.
# Usage: bench/torch_allocator/run_gpu_checks.sh LIB_DIR OUT_DIR
#   LIB_DIR holds libcudascope_torch_allocator.so, cudascope_torch.py and libcudascope_metrics.so
set -u
lib=${1:?usage: run_gpu_checks.sh LIB_DIR OUT_DIR}
out=${2:?usage: run_gpu_checks.sh LIB_DIR OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
export PYTHONPATH=$lib${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=:4096:8
runs=$out/runs.jsonl
: > "$runs"
step() { echo "== $*" >&2; "$@" >> "$runs" || echo "!! failed: $*" >&2; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' >&2
for conf in "" "expandable_segments:True" "max_split_size_mb:128"; do
  for allocator in pytorch cudascope; do
    PYTORCH_CUDA_ALLOC_CONF=$conf step python3 "$here/train_loop.py" --allocator $allocator --steps 200
  done
done
# The default configuration again, cudascope first, for the spread of the wall times.
for allocator in cudascope pytorch; do step python3 "$here/train_loop.py" --allocator $allocator --steps 200; done
# The metrics endpoint scraped mid-run; history with NVTX phases and the snapshot of a run.
CUDASCOPE_METRICS=127.0.0.1:9464 step python3 -X faulthandler "$here/train_loop.py" --allocator cudascope \
  --steps 200 --metrics-out "$out/metrics.txt"
step python3 -X faulthandler "$here/train_loop.py" --allocator cudascope --steps 200 \
  --snapshot "$out/train_snapshot.pickle.gz"
python3 - "$out/train_snapshot.pickle.gz" >&2 <<'PY' || echo "!! snapshot check failed" >&2
import collections, gzip, pickle, sys
snapshot = pickle.load(gzip.open(sys.argv[1]))
trace = snapshot["device_traces"][0]
phases = collections.Counter(e.get("user_metadata", "").split(";")[-1] for e in trace if e["action"] == "alloc")
print("snapshot:", len(snapshot["segments"]), "segments,", len(trace), "trace entries; allocations by innermost NVTX range:",
      dict(phases.most_common(8)))
PY
for allocator in pytorch cudascope; do step python3 "$here/alloc_ops.py" --allocator $allocator; done
step python3 "$here/oom_and_graph.py" --allocator pytorch
CUDASCOPE_OOM_SNAPSHOT=$out/oom_snapshot.json step python3 "$here/oom_and_graph.py" --allocator cudascope
python3 "$here/summarize.py" "$runs" > "$out/summary.md"
cat "$out/summary.md" >&2
