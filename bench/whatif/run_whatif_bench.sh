#!/bin/bash
# Times `cudascope whatif` on a training-like snapshot of about 900k trace entries
# (bench/gui/make_training_snapshot.py: dynamic shapes, two streams, thousands of stacks).
#
#   bench/whatif/run_whatif_bench.sh BUILD_DIR OUT_DIR [ENTRIES]
#
# Prints, and writes to OUT_DIR/whatif_bench.txt, the load time and each setting's wall and
# CPU seconds as the command reports them (--json), plus the whole command's wall and CPU time.
# The target: at most 5 s per setting on a 2-core machine.
set -euo pipefail
build=$1
out=$2
entries=${3:-900000}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
snap=$out/train_${entries}.pickle
# make_training_snapshot.py sizes its output in pickle bytes, about 82 per entry.
[ -f "$snap" ] || python3 "$here/../gui/make_training_snapshot.py" "$snap" --bytes $((82 * entries)) --seed 3
confs=(--conf expandable_segments:True --conf max_split_size_mb:128 --conf roundup_power2_divisions:4)
start=$(date +%s.%N)
/usr/bin/time -f '%e %U %S' -o "$out/time.txt" "$build/cli/cudascope" whatif "$snap" "${confs[@]}" --json \
  > "$out/whatif.json" 2> "$out/whatif.stderr"
read -r wall user sys < "$out/time.txt"
python3 - "$out/whatif.json" "$wall" "$user" "$sys" <<'PY' | tee "$out/whatif_bench.txt"
import json, sys
r = json.load(open(sys.argv[1]))
wall, user, sys_ = map(float, sys.argv[2:5])
print(f"snapshot: {r['trace_entries']} trace entries -> {r['requests']} requests")
print(f"{'setting':40} {'wall s':>7} {'cpu s':>7} {'peak reserved':>14} {'cudaMalloc':>10}")
for s in r["settings"]:
    name = (s["conf"] or "(defaults)") + (" [snapshot]" if s["baseline"] else "")
    print(f"{name:40} {s['wall_seconds']:7.2f} {s['cpu_seconds']:7.2f} {s['peak_reserved_bytes']:14d} {s['cuda_malloc_count']:10d}")
replay = sum(s["wall_seconds"] for s in r["settings"])
print(f"whole command: wall {wall:.2f} s, cpu {user + sys_:.2f} s (user {user:.2f}, sys {sys_:.2f}); "
      f"load and conversion about {wall - replay:.2f} s wall")
PY
