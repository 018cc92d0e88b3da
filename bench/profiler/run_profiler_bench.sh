#!/bin/bash
# On a GPU machine, from the repository root, after building into $BUILD:
#   bench/profiler/run_profiler_bench.sh BUILD OUTDIR [all|overheads|launch]
# The PyTorch comparison (cudascope run vs torch.profiler on the same steps), the SIGKILL
# check, and every overhead figure measured against the plain run in this same call.
# "launch": only the launch-bound loops (CUPTI's floor, cudascope run, torch.profiler) and
# NVTX push+pop.
set -u
BUILD=$1
OUT=$2
PART=${3:-all}
CLI=$BUILD/cli/cudascope
INJECT=$(readlink -f $BUILD/lib/libcudascope_inject.so)
LOOP=$BUILD/bench/profiler/launch_loop
FLOOR=$BUILD/bench/profiler/cupti_floor
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
seconds() { sed -n 's/.*"seconds":\([0-9.]*\).*/\1/p'; }

echo "== device"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
if [ "$PART" = all ]; then

echo "== PyTorch: cudascope run vs torch.profiler on the same steps"
$CLI run -o $OUT/train_cudascope.json.gz --activities all -- python3 bench/profiler/torch_train.py --steps 3 --warmup 2
python3 bench/profiler/torch_train.py --steps 3 --warmup 2 --torch-profiler /tmp/train_torch.json && gzip -c /tmp/train_torch.json > $OUT/train_torch.json.gz
python3 bench/profiler/compare_traces.py $OUT/train_cudascope.json.gz /tmp/train_torch.json 2 3
$CLI stats --check $OUT/train_cudascope.json.gz > $OUT/train_stats.txt; echo "stats --check exit $?"; head -25 $OUT/train_stats.txt

echo "== SIGKILL while recording"
CUDA_INJECTION64_PATH=$INJECT NVTX_INJECTION64_PATH=$INJECT CUDASCOPE_TRACE=/tmp/killed.json $LOOP endless &
pid=$!; sleep 4; kill -9 $pid; wait $pid 2>/dev/null
ls -la /tmp/killed.json; $CLI stats --check /tmp/killed.json | tail -4

fi

echo "== launch loop, 20000 tiny kernels (seconds, median of 5, alternating)"
# CUPTI alone (cupti_floor: no cudascope code), then what cudascope adds, one step at a time:
# its host clock (ts), the 200 ms periodic flush, the launch call's runtime records.
run_cfg() {  # name, command...
  local name=$1; shift; "$@" 2>/dev/null | seconds >> /tmp/lp_$name
}
for i in 1 2 3 4 5; do
  run_cfg plain $LOOP 20000
  run_cfg cupti_concurrent $FLOOR 20000 concurrent
  run_cfg cupti_kernel $FLOOR 20000 kernel
  run_cfg cupti_conc_ts_flush $FLOOR 20000 concurrent ts flush
  run_cfg cupti_conc_ts_flush_launch $FLOOR 20000 concurrent ts flush launch
  run_cfg default $CLI run -o /tmp/l.json -- $LOOP 20000
  run_cfg kernel_only $CLI run -o /tmp/l.json --activities kernel -- $LOOP 20000
  [ "$PART" = launch ] && continue
  run_cfg runtime $CLI run -o /tmp/l.json --activities default,runtime -- $LOOP 20000
  run_cfg all $CLI run -o /tmp/l.json --activities all -- $LOOP 20000
done
for f in /tmp/lp_*; do n=${f#/tmp/lp_}; echo "$n $(median < $f) [$(tr '\n' ' ' < $f)]"; done | tee $OUT/launch_loop.txt
$FLOOR 20000 concurrent
$FLOOR 20000 concurrent ts flush launch buffer=8
$CLI run -o /tmp/l.json -- $LOOP 20000; $CLI stats /tmp/l.json | grep -E "tiny|Dropped"

echo "== PyTorch loop, 20000 x.add_(1) (seconds, 5 repetitions each)"
python3 bench/profiler/torch_launch_loop.py | seconds > /tmp/tplain
$CLI run -o /tmp/t.json -- python3 bench/profiler/torch_launch_loop.py 2>/dev/null | seconds > /tmp/tours
python3 bench/profiler/torch_launch_loop.py --torch-profiler | seconds > /tmp/ttorch
for f in tplain tours ttorch; do echo "$f $(median < /tmp/$f) [$(tr '\n' ' ' < /tmp/$f)]"; done | tee $OUT/torch_loop.txt

echo "== NVTX push+pop: no tool, then recording"
$BUILD/bench/profiler/nvtx_bench --benchmark_format=console 2>&1 | grep -E "mean|median"
NVTX_INJECTION64_PATH=$INJECT CUDASCOPE_TRACE=/tmp/nvtx.json $BUILD/bench/profiler/nvtx_bench 2>&1 | grep -E "mean|median"
$CLI stats /tmp/nvtx.json | grep -E "Dropped|Trace:"

[ "$PART" = launch ] && exit 0
echo "== 1M kernels under cudascope run (default activities)"
TIMEFORMAT="whole run under cudascope run: %R s"; time $CLI run -o /tmp/m.json -- $LOOP 1000000
TIMEFORMAT="whole run plain: %R s"; time $LOOP 1000000

ls -la /tmp/m.json; $CLI stats /tmp/m.json | grep -E "tiny|Dropped|Trace:"
