#!/bin/sh
# The two-GPU check of several ranks (docs/ranks.md), on a machine with 2+ GPUs and PyTorch:
#   1. cudascope run around torchrun: one trace per rank from the pattern, distributedInfo,
#      NCCL kernels marked as communication;
#   2. torchrun around cudascope run (--no-python): the same files from inside each rank;
#   3. torch.profiler per rank (Kineto traces) for comparison;
#   4. cudascope stats of each set: per-rank and across-rank tables; summaries written beside
#      the traces (--summary-out) merge to the same tables;
#   5. a slow rank (--slow-rank 1): the other rank's exposed communication must grow;
#   6. rank 1 taken for another host whose clock is OFFSET_NS ahead (the test settings
#      CUDASCOPE_TEST_HOSTNAME and CUDASCOPE_TEST_CLOCK_OFFSET_NS, docs/ranks.md): stats --json
#      must recover the offset within the error it reports, from the traces and the summaries.
# Usage: bench/ranks/run_ddp_check.sh [BUILD_DIR] [OUT_DIR]   (NPROC=2 STEPS=30 OFFSET_NS=7000000 to change)
set -eu
BUILD=${1:-build}
OUT=${2:-ranks-out}
NPROC=${NPROC:-2}
STEPS=${STEPS:-30}
OFFSET_NS=${OFFSET_NS:-7000000}
CLI=$(realpath "$BUILD/cli/cudascope")
HERE=$(dirname "$(realpath "$0")")
TRAIN="$HERE/ddp_train.py"
rm -rf "$OUT" && mkdir -p "$OUT"
export CUDASCOPE_BACKEND=cuda
nvidia-smi --query-gpu=index,name,memory.total --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'

echo "== 1. cudascope run -o trace_%r.json.gz -- torchrun ..."
"$CLI" run -o "$OUT/outer_%r.json.gz" -- \
  torchrun --standalone --nproc-per-node "$NPROC" "$TRAIN" --steps "$STEPS"
ls -la "$OUT"

echo "== 2. torchrun --no-python ... cudascope run -o inner_%r.json.gz -- python ..."
torchrun --standalone --nproc-per-node "$NPROC" --no-python \
  "$CLI" run -o "$OUT/inner_%r.json.gz" -- python3 "$TRAIN" --steps "$STEPS"

echo "== 3. torch.profiler per rank"
torchrun --standalone --nproc-per-node "$NPROC" "$TRAIN" --steps "$STEPS" --kineto "$OUT/kineto_%r.json"

echo "== 4. stats"
OUTER=""; INNER=""; KINETO=""; SUMMARIES=""
r=0
while [ "$r" -lt "$NPROC" ]; do
  for f in "$OUT/outer_$r.json.gz" "$OUT/inner_$r.json.gz" "$OUT/kineto_$r.json"; do
    [ -s "$f" ] || { echo "FAIL: missing $f"; exit 1; }
  done
  # distributedInfo: rank, local_rank, world_size, backend; NCCL kernels marked.
  python3 - "$OUT/outer_$r.json.gz" "$r" "$NPROC" <<'PY'
import gzip, json, sys
path, rank, world = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = json.load(gzip.open(path))
d = t["distributedInfo"]
assert (d["rank"], d["local_rank"], d["world_size"], d["backend"]) == (rank, rank, world, "nccl"), d
nccl = [e for e in t["traceEvents"] if e.get("cat") == "kernel" and e["name"].startswith("nccl")]
marked = [e for e in nccl if e.get("args", {}).get("communication") is True]
assert nccl and len(marked) == len(nccl), (len(nccl), len(marked))
print(f"{path}: {d}; {len(nccl)} NCCL kernels, all marked; collectives",
      sorted({e['args'].get('collective', '?') for e in nccl}))
PY
  "$CLI" stats --summary-out "$OUT/summary_$r.json" "$OUT/outer_$r.json.gz"
  OUTER="$OUTER $OUT/outer_$r.json.gz"; INNER="$INNER $OUT/inner_$r.json.gz"
  KINETO="$KINETO $OUT/kineto_$r.json"; SUMMARIES="$SUMMARIES $OUT/summary_$r.json"
  r=$((r + 1))
done
# shellcheck disable=SC2086
{
  echo "-- cudascope around torchrun"; "$CLI" stats $OUTER
  echo "-- cudascope inside each rank"; "$CLI" stats $INNER
  echo "-- torch.profiler (Kineto) of the same loop"; "$CLI" stats $KINETO
  echo "-- merged from the summaries alone"; "$CLI" stats $SUMMARIES
} | tee "$OUT/stats.txt"
"$CLI" stats --json $OUTER > "$OUT/outer_stats.json"
"$CLI" stats --json $SUMMARIES > "$OUT/summary_stats.json"
cmp "$OUT/outer_stats.json" "$OUT/summary_stats.json" && echo "summaries merge to the traces' tables"

echo "== 5. a slow rank: the others wait in the all-reduce"
"$CLI" run -o "$OUT/slow_%r.json.gz" -- \
  torchrun --standalone --nproc-per-node "$NPROC" "$TRAIN" --steps "$STEPS" --slow-rank 1 --slow-ms 20
SLOW=""; r=0
while [ "$r" -lt "$NPROC" ]; do SLOW="$SLOW $OUT/slow_$r.json.gz"; r=$((r + 1)); done
# shellcheck disable=SC2086
"$CLI" stats $SLOW | tee "$OUT/slow_stats.txt"
"$CLI" stats --json $SLOW > "$OUT/slow_stats.json"
python3 - "$OUT/outer_stats.json" "$OUT/slow_stats.json" <<'PY'
import json, sys
base, slow = (json.load(open(p)) for p in sys.argv[1:])
def exposed(report, rank):
    row = next(r for r in report["ranks"] if r["rank"] == rank)
    return row["exposed_communication_ns"] / max(row["steps"], 1) / 1e6
print(f"rank 0 exposed communication per step: {exposed(base, 0):.2f} ms balanced, {exposed(slow, 0):.2f} ms with rank 1 slow")
assert exposed(slow, 0) > exposed(base, 0) + 10, "rank 0 should wait ~20 ms a step for rank 1"
print("PASS")
PY

echo "== 6. rank 1 on a fake host, its clock $OFFSET_NS ns ahead: stats recovers the offset"
cat > "$OUT/offset_rank.sh" <<EOF
#!/bin/sh
# Rank 1 as if on another host whose clock is $OFFSET_NS ns ahead (test settings, docs/ranks.md).
if [ "\$RANK" = 1 ]; then export CUDASCOPE_TEST_CLOCK_OFFSET_NS=$OFFSET_NS CUDASCOPE_TEST_HOSTNAME=fake-host-1; fi
exec "\$@"
EOF
chmod +x "$OUT/offset_rank.sh"
torchrun --standalone --nproc-per-node "$NPROC" --no-python \
  "$OUT/offset_rank.sh" "$CLI" run -o "$OUT/offset_%r.json.gz" -- python3 "$TRAIN" --steps "$STEPS"
SHIFTED=""; SHIFTED_SUMMARIES=""; r=0
while [ "$r" -lt "$NPROC" ]; do
  SHIFTED="$SHIFTED $OUT/offset_$r.json.gz"; SHIFTED_SUMMARIES="$SHIFTED_SUMMARIES $OUT/summary_offset_$r.json"
  r=$((r + 1))
done
# shellcheck disable=SC2086
{
  "$CLI" stats $SHIFTED | tee "$OUT/offset_stats.txt"
  "$CLI" stats --json $SHIFTED > "$OUT/offset_stats.json"
  "$CLI" stats --json $SHIFTED_SUMMARIES > "$OUT/offset_summary_stats.json"
}
python3 - "$OUT/offset_stats.json" "$OUT/offset_summary_stats.json" "$OFFSET_NS" <<'PY'
import json, sys
traces, summaries = (json.load(open(p))["clocks"] for p in sys.argv[1:3])
shift = int(sys.argv[3])
assert not traces["one_host"], "rank 1 should be taken for another host: " + repr(traces)
r1 = next(r for r in traces["ranks"] if r["rank"] == 1)
assert r1["host"] == "fake-host-1" and r1["clock"] == "aligned", r1
# The offset puts rank 1's times on rank 0's clock: it undoes the shift, so the true one is -shift.
residual = r1["offset_ns"] + shift
print(f"rank 1: offset {r1['offset_ns'] / 1e3:.3f} us ± {r1['error_ns'] / 1e3:.3f} us "
      f"({r1['collectives']} collectives paired by {r1['paired_by']}, spread {r1['spread_ns'] / 1e3:.3f} us); "
      f"true {-shift / 1e3:.3f} us, off by {residual / 1e3:.3f} us")
assert summaries == traces, "the summaries align differently from the traces"
if abs(residual) > r1["error_ns"]:
    print("FAIL: the true offset lies outside the estimated error")
    sys.exit(1)
print("PASS")
PY
