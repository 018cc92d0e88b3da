#!/bin/sh
# `cudascope stats` over generated rank traces (make_rank_traces.py) of 16, 64 and 256 ranks:
# peak resident memory and time, beside those of the largest trace alone (what memory must
# stay bounded by). Prints a Markdown table for bench/results/ranks.md.
#
#   bench/ranks/run_stats_scale.sh CUDASCOPE WORK_DIR [RANKS...]
set -eu
cli=$1
work=$2
shift 2
[ $# -gt 0 ] || set -- 16 64 256
here=$(dirname "$0")

# "seconds peak_kib" of one command (GNU time's -f).
measure() {
  /usr/bin/time -f '%e %M' -o "$work/time.txt" "$@" >/dev/null 2>"$work/stderr.txt" || {
    echo "failed: $*" >&2
    cat "$work/stderr.txt" >&2
    exit 1
  }
  cat "$work/time.txt"
}

echo "| ranks | files | on disk | JSON | stats time | peak RSS | largest trace alone: time, peak RSS |"
echo "|---|---|---|---|---|---|---|"
for n in "$@"; do
  dir=$work/r$n
  # The generator's line (files, bytes on disk and of JSON) is kept beside the directory.
  [ -d "$dir" ] || python3 "$here/make_rank_traces.py" "$dir" --ranks "$n" >"$dir.txt"
  json_bytes=$(sed 's/.* \([0-9]*\) bytes of JSON/\1/' "$dir.txt")
  files=$(ls "$dir" | wc -l)
  disk=$(du -sb "$dir" | cut -f1)
  largest=$(ls -S "$dir" | head -n 1)
  # The largest twice: the rank tables' path (one input alone gets the single-trace tables).
  set -- $(measure "$cli" stats --json "$dir"/*)
  all_s=$1 all_kib=$2
  set -- $(measure "$cli" stats --json "$dir/$largest" "$dir/$largest")
  one_s=$1 one_kib=$2
  echo "| $n | $files | $((disk / 1048576)) MiB | $((json_bytes / 1048576)) MiB | ${all_s} s | $((all_kib / 1024)) MiB | ${one_s} s, $((one_kib / 1024)) MiB |"
done
