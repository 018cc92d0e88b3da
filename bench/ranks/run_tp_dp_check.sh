#!/bin/sh
# The four-GPU check of collectives paired by communicator (docs/ranks.md), on a machine with
# 4+ GPUs and PyTorch: tensor-parallel pairs {0,1},{2,3} and data-parallel pairs {0,2},{1,3}
# (tp_dp_train.py), where pairing collectives by their order would join different groups'.
#   1. torch.profiler per rank (Kineto traces: record_param_comms names each collective's
#      process group, and its sequence number in releases that write "Seq"): kineto_0..3.json;
#   2. the same loop under cudascope run -o r_%r.json.gz -- torchrun ...: r_0..3.json.gz;
#   3. cudascope stats of the Kineto traces: collectives paired by communicator and sequence
#      number (by communicator and order where PyTorch writes no "Seq", as 2.11 does), one row
#      per group, each pairing exactly its group's ranks; the summaries
#      (--summary-out) merge to the same tables;
#   4. cudascope stats of cudascope's own traces: four ranks, their NCCL kernels, collectives
#      paired by NCCL communicator (the commHash of NCCL's NVTX payload, NCCL 2.25+) and order,
#      each tensor- and data-parallel pair one communicator of exactly its two ranks; the
#      grouped send/receive's kernels (launched in ncclGroupEnd) paired too, none left unpaired.
# Prints PASS/FAIL lines and exits non-zero on any failure. The rank traces stay in OUT_DIR.
# Usage (from the repository root): bash bench/ranks/run_tp_dp_check.sh CUDASCOPE OUT_DIR
#   CUDASCOPE: the cudascope executable (e.g. build/cli/cudascope); STEPS=8 to change.
set -eu
CLI=$(realpath "${1:?usage: run_tp_dp_check.sh CUDASCOPE OUT_DIR}")
OUT=${2:?usage: run_tp_dp_check.sh CUDASCOPE OUT_DIR}
STEPS=${STEPS:-8}
HERE=$(dirname "$(realpath "$0")")
TRAIN="$HERE/tp_dp_train.py"
NPROC=4
STAGE_SECONDS=100  # two runs of four ranks must fit the check's four minutes
failures=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

rm -rf "$OUT" && mkdir -p "$OUT"
export CUDASCOPE_BACKEND=cuda
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=index,name,memory.total --format=csv
python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count())')
if [ "$gpus" -lt "$NPROC" ]; then
  echo "FAIL: $NPROC GPUs needed, $gpus found"
  exit 1
fi

echo "== 1. torch.profiler per rank"
if timeout "$STAGE_SECONDS" torchrun --standalone --nproc-per-node "$NPROC" "$TRAIN" --steps "$STEPS" \
    --kineto "$OUT/kineto_%r.json"; then
  pass "torchrun with torch.profiler"
else
  fail "torchrun with torch.profiler (exit $?)"
fi

echo "== 2. cudascope run -o r_%r.json.gz -- torchrun ..."
if timeout "$STAGE_SECONDS" "$CLI" run -o "$OUT/r_%r.json.gz" -- \
    torchrun --standalone --nproc-per-node "$NPROC" "$TRAIN" --steps "$STEPS"; then
  pass "cudascope run around torchrun"
else
  fail "cudascope run around torchrun (exit $?)"
fi
ls -la "$OUT"

KINETO=""; OURS=""; SUMMARIES=""
r=0
while [ "$r" -lt "$NPROC" ]; do
  for f in "$OUT/kineto_$r.json" "$OUT/r_$r.json.gz"; do
    if [ -s "$f" ]; then pass "$f written"; else fail "$f missing"; fi
  done
  KINETO="$KINETO $OUT/kineto_$r.json"; OURS="$OURS $OUT/r_$r.json.gz"
  SUMMARIES="$SUMMARIES $OUT/summary_kineto_$r.json"
  r=$((r + 1))
done
[ "$failures" -eq 0 ] || { echo "FAIL: $failures checks failed before the tables"; exit 1; }

echo "== 3. stats of the torch.profiler traces"
# shellcheck disable=SC2086
"$CLI" stats $KINETO | tee "$OUT/stats_kineto.txt"
# shellcheck disable=SC2086
"$CLI" stats --json $KINETO > "$OUT/stats_kineto.json" || fail "cudascope stats --json of the Kineto traces"
r=0
while [ "$r" -lt "$NPROC" ]; do
  "$CLI" stats --summary-out "$OUT/summary_kineto_$r.json" "$OUT/kineto_$r.json" || fail "--summary-out of kineto_$r.json"
  r=$((r + 1))
done
# shellcheck disable=SC2086
"$CLI" stats --json $SUMMARIES > "$OUT/stats_summaries.json" || fail "cudascope stats --json of the summaries"
if cmp -s "$OUT/stats_kineto.json" "$OUT/stats_summaries.json"; then
  pass "the summaries merge to the traces' tables"
else
  fail "the summaries' tables differ from the traces' (diff $OUT/stats_kineto.json $OUT/stats_summaries.json)"
fi
python3 - "$OUT/stats_kineto.json" "$OUT/stats_kineto.txt" $KINETO <<'PY' || failures=$((failures + 1))
import json, re, sys
report, text = json.load(open(sys.argv[1])), open(sys.argv[2]).read()
ok = True
def check(good, what):
    global ok
    print(("PASS: " if good else "FAIL: ") + what)
    ok = ok and good
# The rule the traces allow: PyTorch releases whose record_param_comms carries "Seq" (the
# operation's sequence number) pair by it; those without (2.11) by each group's order.
has_seq = any("Seq" in e.get("args", {}) for path in sys.argv[3:] for e in json.load(open(path))["traceEvents"]
              if e.get("name") == "record_param_comms")
expected = "communicator and sequence number" if has_seq else "communicator and order"
rule = report["collectives_paired_by"]
check(rule == expected, f"Kineto traces: collectives paired by {rule} (record_param_comms "
      f"{'with' if has_seq else 'without'} Seq: {expected} expected)")
check(f"Collectives across ranks (paired by {expected}" in text, "the table's header says how collectives were paired")
want = {frozenset({0, 1}), frozenset({2, 3}), frozenset({0, 2}), frozenset({1, 3})}
seen = set()
for c in report["communicators"]:
    members = frozenset(int(m) for m in re.findall(r"\d+", c["members"]))
    ranks = frozenset(r for part in c["ranks"].split()  # "0 2", or runs as "0-3"
                      for r in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1))
    seen.add(ranks)
    check(ranks == members and c["collectives"] > 0 and c["partial"] == 0,
          f"communicator {c['communicator']} ({c['description']}): {c['collectives']} collectives paired on ranks "
          f"{sorted(ranks)}, its members {c['members']}; {c['partial']} found on some ranks only; "
          f"wait median {c['wait_median_ns'] / 1e3:.1f} us, last to arrive most often: rank {c['last_to_arrive']}")
check(want <= seen, f"the tensor- and data-parallel pairs each have their row: {sorted(sorted(s) for s in seen)}")
check(not any("not among its members" in n for n in report["notes"]), "no collective paired outside its group")
sys.exit(0 if ok else 1)
PY

echo "== 4. stats of cudascope's own traces"
# shellcheck disable=SC2086
"$CLI" stats $OURS | tee "$OUT/stats_ours.txt"
# shellcheck disable=SC2086
"$CLI" stats --json $OURS > "$OUT/stats_ours.json" || fail "cudascope stats --json of cudascope's traces"
python3 - "$OUT" "$NPROC" "$STEPS" <<'PY' || failures=$((failures + 1))
import collections, gzip, json, sys
out, nproc, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
ok = True
report = json.load(open(f"{out}/stats_ours.json"))


def check_steps(r, t):
    """Each "step N" NVTX range is a step of its own (the loop's steps and its 2 warm-ups), the
    ranges open and close in pairs on every thread, and the per-rank table counts them."""
    events = t["traceEvents"]
    ranges = [e for e in events if e.get("cat") == "nvtx" and e.get("ph") == "B" and e["name"].startswith("step ")]
    depth = collections.Counter()
    for e in events:
        if e.get("cat") == "nvtx" and e.get("ph") in ("B", "E"):
            depth[e["tid"]] += 1 if e["ph"] == "B" else -1
    unclosed = {tid: d for tid, d in depth.items() if d != 0}
    dropped = t.get("cudascopeSummary", {}).get("dropped")
    rank_row = next((x for x in report["ranks"] if x.get("rank") == r), {})
    good = len(ranges) == steps + 2 and not unclosed and rank_row.get("steps") == steps + 2
    print(("PASS: " if good else "FAIL: ") + f"r_{r}.json.gz: {len(ranges)} step ranges ({steps + 2} expected), "
          f"per-rank table {rank_row.get('steps')} steps; NVTX ranges left open or closed twice, by thread: "
          f"{unclosed or 'none'}; dropped records {dropped}")
    return good


for r in range(nproc):
    t = json.load(gzip.open(f"{out}/r_{r}.json.gz"))
    ok = check_steps(r, t) and ok
    d = t.get("distributedInfo", {})
    nccl = [e for e in t["traceEvents"] if e.get("cat") == "kernel" and e.get("args", {}).get("communication") is True]
    grouped = [e for e in nccl if "SendRecv" in e["name"]]
    good = d.get("rank") == r and d.get("world_size") == nproc and len(nccl) > 0 and len(grouped) > 0
    print(("PASS: " if good else "FAIL: ") + f"r_{r}.json.gz: distributedInfo {d}; {len(nccl)} NCCL kernels marked, "
          f"{len(grouped)} of them the grouped send/receive's")
    ok = ok and good
rule = report["collectives_paired_by"]
good = len(report["ranks"]) == nproc and rule == "NCCL communicator and order"
print(("PASS: " if good else "FAIL: ") + f"cudascope's traces: {len(report['ranks'])} ranks, collectives paired by {rule}")
# NCCL names no members: each communicator's ranks are those whose traces hold it. The
# tensor- and data-parallel pairs must each be one communicator of exactly their two ranks
# (the world's communicator, if the job used it, holds all four).
want = {frozenset({0, 1}), frozenset({2, 3}), frozenset({0, 2}), frozenset({1, 3})}
seen = set()
for c in report["communicators"]:
    ranks = frozenset(r for part in c["ranks"].split()
                      for r in range(int(part.split("-")[0]), int(part.split("-")[-1]) + 1))
    seen.add(ranks)
    fine = c["collectives"] > 0 and c["partial"] == 0 and (ranks in want or len(ranks) == nproc)
    print(("PASS: " if fine else "FAIL: ") + f"communicator {c['communicator']}: {c['collectives']} collectives "
          f"paired by {c.get('paired_by', rule)} on ranks {sorted(ranks)}; {c['partial']} found on some ranks only")
    good = good and fine
print(("PASS: " if want <= seen else "FAIL: ") + f"the tensor- and data-parallel pairs each have their communicator: "
      f"{sorted(sorted(s) for s in seen)}")
good = good and want <= seen
unpaired = [n for n in report["notes"] if "left unpaired" in n]
print(("FAIL: " if unpaired else "PASS: ") + "every NCCL kernel names its communicator (grouped calls' through "
      f"ncclGroupEnd){': ' + '; '.join(unpaired) if unpaired else ''}")
good = good and not unpaired
sys.exit(0 if ok and good else 1)
PY

if [ "$failures" -eq 0 ]; then
  echo "PASS: collectives paired by communicator on $NPROC GPUs; traces in $OUT"
else
  echo "FAIL: $failures checks failed; traces in $OUT"
  exit 1
fi
