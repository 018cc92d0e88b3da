#!/usr/bin/env python3
"""PyTorch's caching host allocator (pinned memory) against cudascope's: the same steps (pinned
tensors allocated and freed, unused or used by non_blocking copies on one or two side streams,
a cached block reused, a block whose event is complete waiting behind an older one that is
not, empty_cache, reset_peak, reset_accumulated) run under torch and under host_stats_dump,
and torch.cuda.host_memory_stats() compared with cudascope's host_memory_stats() key by key
after every step. Timings (host_*_time total/max/min/avg) are not compared; their counts are.

Each side is also checked against the figures derived from reading torch's source
(aten/src/ATen/core/CachingHostAllocator.h, see runtime/include/cudascope/cuda/host_memory.h);
a difference there is reported as a NOTE (it means torch changed, or the reading was wrong).

Prints one line per step and a final PASS or FAIL line. Exit status: 0 when every compared key
is equal, 1 when one differs, 2 when a side could not run.

On a GPU machine, from the repository root:
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DCUDASCOPE_WITH_GUI=OFF \\
      -DCMAKE_CUDA_ARCHITECTURES=90 -DCUDASCOPE_BUILD_BENCH=OFF
  cmake --build build-gpu -j16 --target cudascope_runtime
  python3 bench/torch_compare/host_stats_check.py --build-dir build-gpu
(--build-dir compiles bench/torch_compare/host_stats_dump.cpp against that build unless
--host-stats-dump names an already built driver.)

Without a GPU or torch, the cudascope side alone against the derived figures, on the
simulated device:
  python3 bench/torch_compare/host_stats_check.py --build-dir build --backend sim --skip-torch
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys

KiB = 1024
REPO = pathlib.Path(__file__).resolve().parents[2]

# Milliseconds a side stream is kept busy so that a block used there is still waiting when the
# next steps run; long enough for the few Python steps in between, on any machine.
BUSY_MS = 1500

# The steps, as host_stats_dump reads them (its header says what each does). Names: A 16 KiB,
# B 128 KiB, C/C2 4 KiB, D 64 KiB, E/E2 32 KiB blocks (sizes rounded up to powers of two).
STEPS = """
empty_cache
reset_accumulated
reset_peak
stats start
alloc A 10000
stats alloc_A
free A
stats free_A_unused
alloc A 10000
stats alloc_A_again_cached
free A
stats free_A_again
empty_cache
stats empty_cache_1
alloc B 100000
use B 0
stats alloc_B_used_on_stream0
free B
stats free_B_pending
sync 0
alloc C 3000
stats alloc_C_releases_B
alloc B 100000
stats alloc_B_again_cached
sleep 1 {busy}
use B 0
use B 1
free B
sync 0
stats free_B_used_on_two_streams
alloc D 50000
stats alloc_D_B_still_waits_for_stream1
alloc E 20000
use E 0
free E
sync 0
stats free_E_pending
alloc C2 3000
stats alloc_C2_E_waits_behind_B
sync all
alloc E2 20000
stats alloc_E2_releases_B_and_E
reset_peak
stats reset_peak
reset_accumulated
stats reset_accumulated
free C
free D
free C2
free E2
empty_cache
stats final_empty_cache
""".format(busy=BUSY_MS)

TIMING_UNCOMPARED = {f"{t}.{k}" for t in ("host_alloc_time", "host_free_time") for k in ("total", "max", "min", "avg")}


def figures(prefix, current, peak, allocated, freed):
    return {f"{prefix}.current": current, f"{prefix}.peak": peak, f"{prefix}.allocated": allocated,
            f"{prefix}.freed": freed}


def expect(requests, active_bytes, allocations, allocated_bytes, num_host_alloc, num_host_free):
    out = {}
    out.update(figures("active_requests", *requests))
    out.update(figures("active_bytes", *active_bytes))
    out.update(figures("allocations", *allocations))
    out.update(figures("allocated_bytes", *allocated_bytes))
    out["num_host_alloc"] = num_host_alloc
    out["num_host_free"] = num_host_free
    return out


# What torch's code gives at each stats step, worked out by hand from its rules: a hand-out
# adds 1 / the block's bytes to its size bucket's active figures; a free with no stream use
# changes nothing; a release by completed events takes 1 from active_requests and adds 1 to
# active_bytes.current (freed -1); empty_cache lowers only allocations / allocated_bytes;
# active peaks are sums of bucket peaks; num_host_alloc/free are allocations.allocated/freed.
K = KiB
EXPECTED = {
    "start": expect((0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0), (0, 0, 0, 0), 0, 0),
    "alloc_A": expect((1, 1, 1, 0), (16 * K, 16 * K, 16 * K, 0), (1, 1, 1, 0), (16 * K, 16 * K, 16 * K, 0), 1, 0),
    "free_A_unused": expect((1, 1, 1, 0), (16 * K, 16 * K, 16 * K, 0), (1, 1, 1, 0), (16 * K, 16 * K, 16 * K, 0), 1, 0),
    "alloc_A_again_cached": expect((2, 2, 2, 0), (32 * K, 32 * K, 32 * K, 0), (1, 1, 1, 0),
                                   (16 * K, 16 * K, 16 * K, 0), 1, 0),
    "free_A_again": expect((2, 2, 2, 0), (32 * K, 32 * K, 32 * K, 0), (1, 1, 1, 0), (16 * K, 16 * K, 16 * K, 0), 1, 0),
    "empty_cache_1": expect((2, 2, 2, 0), (32 * K, 32 * K, 32 * K, 0), (0, 1, 1, 1), (0, 16 * K, 16 * K, 16 * K), 1, 1),
    "alloc_B_used_on_stream0": expect((3, 3, 3, 0), (160 * K, 160 * K, 160 * K, 0), (1, 1, 2, 1),
                                      (128 * K, 128 * K, 144 * K, 16 * K), 2, 1),
    "free_B_pending": expect((3, 3, 3, 0), (160 * K, 160 * K, 160 * K, 0), (1, 1, 2, 1),
                             (128 * K, 128 * K, 144 * K, 16 * K), 2, 1),
    "alloc_C_releases_B": expect((3, 4, 4, 1), (164 * K + 1, 164 * K, 164 * K, -1), (2, 2, 3, 1),
                                 (132 * K, 132 * K, 148 * K, 16 * K), 3, 1),
    "alloc_B_again_cached": expect((4, 4, 5, 1), (292 * K + 1, 292 * K + 1, 292 * K, -1), (2, 2, 3, 1),
                                   (132 * K, 132 * K, 148 * K, 16 * K), 3, 1),
    "free_B_used_on_two_streams": expect((4, 4, 5, 1), (292 * K + 1, 292 * K + 1, 292 * K, -1), (2, 2, 3, 1),
                                         (132 * K, 132 * K, 148 * K, 16 * K), 3, 1),
    "alloc_D_B_still_waits_for_stream1": expect((5, 5, 6, 1), (356 * K + 1, 356 * K + 1, 356 * K, -1), (3, 3, 4, 1),
                                                (196 * K, 196 * K, 212 * K, 16 * K), 4, 1),
    "free_E_pending": expect((6, 6, 7, 1), (388 * K + 1, 388 * K + 1, 388 * K, -1), (4, 4, 5, 1),
                             (228 * K, 228 * K, 244 * K, 16 * K), 5, 1),
    "alloc_C2_E_waits_behind_B": expect((7, 7, 8, 1), (392 * K + 1, 392 * K + 1, 392 * K, -1), (5, 5, 6, 1),
                                        (232 * K, 232 * K, 248 * K, 16 * K), 6, 1),
    "alloc_E2_releases_B_and_E": expect((6, 7, 9, 3), (424 * K + 3, 424 * K + 2, 424 * K, -3), (5, 5, 6, 1),
                                        (232 * K, 232 * K, 248 * K, 16 * K), 6, 1),
    "reset_peak": expect((6, 6, 9, 3), (424 * K + 3, 424 * K + 3, 424 * K, -3), (5, 5, 6, 1),
                         (232 * K, 232 * K, 248 * K, 16 * K), 6, 1),
    "reset_accumulated": expect((6, 6, 0, 0), (424 * K + 3, 424 * K + 3, 0, 0), (5, 5, 0, 0),
                                (232 * K, 232 * K, 0, 0), 0, 0),
    "final_empty_cache": expect((6, 6, 0, 0), (424 * K + 3, 424 * K + 3, 0, 0), (0, 5, 0, 5),
                                (0, 232 * K, 0, 232 * K), 0, 5),
}


def parse_steps():
    return [line.split() for line in STEPS.strip().splitlines() if line.strip()]


# --- torch -----------------------------------------------------------------------------------


def torch_side():
    """Runs STEPS with torch; returns (description, [(label, stats)])."""
    import torch

    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA device")
    torch.cuda.init()

    def cycles_per_ms():
        # As torch's tests calibrate torch.cuda._sleep: no pinned memory involved.
        rates = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.cuda._sleep(1_000_000)
            end.record()
            end.synchronize()
            rates.append(1_000_000 / start.elapsed_time(end))
        return sorted(rates)[len(rates) // 2]

    def empty_host_cache():
        if hasattr(torch._C, "_host_emptyCache"):
            torch._C._host_emptyCache()
        else:
            torch.accelerator.empty_host_cache()

    rate = cycles_per_ms()
    pinned, device_copies, streams, results = {}, [], {}, []

    def stream(index):
        if index not in streams:
            streams[index] = torch.cuda.Stream()
        return streams[index]

    def run(op, args):
        # One function call a step, so that no local name outlives its step: a tensor still
        # named by a local would not be freed by "free" (the allocator's free runs when the
        # last reference goes).
        if op == "alloc":
            pinned[args[0]] = torch.empty(int(args[1]), dtype=torch.uint8, pin_memory=True)
        elif op == "free":
            del pinned[args[0]]  # the only reference: the allocator's free runs now
        elif op == "use":
            with torch.cuda.stream(stream(int(args[1]))):
                dev = torch.empty(pinned[args[0]].numel(), dtype=torch.uint8, device="cuda")
                dev.copy_(pinned[args[0]], non_blocking=True)
            device_copies.append(dev)
        elif op == "sleep":
            with torch.cuda.stream(stream(int(args[0]))):
                torch.cuda._sleep(int(int(args[1]) * rate))
        elif op == "sync":
            if args[0] == "all":
                torch.cuda.synchronize()
            else:
                stream(int(args[0])).synchronize()
        elif op == "empty_cache":
            empty_host_cache()
        elif op == "reset_peak":
            torch.cuda.reset_peak_host_memory_stats()
        elif op == "reset_accumulated":
            torch.cuda.reset_accumulated_host_memory_stats()
        elif op == "stats":
            results.append((args[0], {k: int(v) for k, v in torch.cuda.host_memory_stats().items()}))
        else:
            raise RuntimeError(f"unknown step {op} {args}")

    for step in parse_steps():
        run(step[0], step[1:])
    torch.cuda.synchronize()
    describe = (f"torch {torch.__version__} (git {getattr(torch.version, 'git_version', '?')}, "
                f"cuda {torch.version.cuda}) on {torch.cuda.get_device_name()}; _sleep {rate:.0f} cycles/ms")
    return describe, results


# --- cudascope -------------------------------------------------------------------------------


def build_dump(build_dir, src_dir, out):
    lib_dir = build_dir / "lib"
    compiler = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        raise RuntimeError("no C++ compiler (set CXX) to build host_stats_dump")
    command = [compiler, "-std=c++20", "-O2", "-I", str(src_dir / "runtime/include"),
               "-I", str(build_dir / "runtime/include"), str(src_dir / "bench/torch_compare/host_stats_dump.cpp"),
               "-o", str(out), "-L", str(lib_dir), "-lcudascope_runtime", f"-Wl,-rpath,{lib_dir}"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError("building host_stats_dump failed:\n" + " ".join(command) + "\n" + done.stderr[-4000:])
    return out


def ours_side(dump, backend):
    env = dict(os.environ, CUDASCOPE_BACKEND=backend)
    done = subprocess.run([str(dump)], input=STEPS, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{dump} exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    results = []
    for line in done.stdout.splitlines():
        line = line.strip()
        if line:
            record = json.loads(line)
            results.append((record["label"], {k: int(v) for k, v in record["stats"].items()}))
    return f"cudascope {dump} on backend {backend}", results


# --- comparison ------------------------------------------------------------------------------


def compared_keys(a, b):
    return sorted(k for k in set(a) | set(b) if k not in TIMING_UNCOMPARED)


def describe_differences(keys, left, right, left_name, right_name, limit=12):
    bad = [k for k in keys if left.get(k) != right.get(k)]
    text = ", ".join(f"{k} {left_name}={left.get(k, 'absent')} {right_name}={right.get(k, 'absent')}"
                     for k in bad[:limit])
    if len(bad) > limit:
        text += f", and {len(bad) - limit} more"
    return bad, text


def check_expected(name, results):
    """NOTE lines where a side's figures differ from those derived from torch's source."""
    notes = 0
    for label, stats in results:
        expected = EXPECTED.get(label)
        if expected is None:
            continue
        bad, text = describe_differences(sorted(expected), expected, stats, "derived", name)
        if bad:
            notes += 1
            print(f"NOTE {label}: {name} differs from the figures derived from torch's source: {text}")
    return notes


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host-stats-dump", type=pathlib.Path, help="an already built host_stats_dump")
    parser.add_argument("--build-dir", type=pathlib.Path, help="a cudascope build (its lib/ and runtime/include/): "
                        "host_stats_dump is compiled against it into BUILD_DIR/host_stats_dump")
    parser.add_argument("--src-dir", type=pathlib.Path, default=REPO, help="the cudascope checkout (default: this one)")
    parser.add_argument("--backend", default="cuda", choices=("cuda", "sim"),
                        help="CUDASCOPE_BACKEND for the cudascope side (default cuda)")
    parser.add_argument("--skip-torch", action="store_true",
                        help="no torch: check the cudascope side against the derived figures only")
    args = parser.parse_args()

    try:
        if args.host_stats_dump is not None:
            dump = args.host_stats_dump.resolve()
        elif args.build_dir is not None:
            build_dir = args.build_dir.resolve()
            dump = build_dump(build_dir, args.src_dir.resolve(), build_dir / "host_stats_dump")
        else:
            parser.error("give --host-stats-dump or --build-dir")
        ours_name, ours = ours_side(dump, args.backend)
    except (RuntimeError, OSError, subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        print(f"FAIL: the cudascope side could not run: {e}")
        return 2
    print(ours_name)
    for key in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "CUDASCOPE_ALLOC_CONF"):
        if os.environ.get(key):
            print(f"{key}={os.environ[key]} (both sides read it; the derived figures assume the default pinned_* settings)")

    if args.skip_torch:
        notes = check_expected("ours", ours)
        missing = sorted(set(EXPECTED) - {label for label, _ in ours})
        if missing:
            print(f"FAIL: the cudascope side printed no stats for {', '.join(missing)}")
            return 1
        print(f"{'PASS' if notes == 0 else 'FAIL'}: cudascope against the figures derived from torch's source, "
              f"{len(ours)} steps, {notes} differing (torch not run)")
        return 0 if notes == 0 else 1

    try:
        torch_name, theirs = torch_side()
    except Exception as e:  # noqa: BLE001 - any torch failure is "could not run", reported as such
        print(f"FAIL: the torch side could not run: {type(e).__name__}: {e}")
        return 2
    print(torch_name)

    if [label for label, _ in theirs] != [label for label, _ in ours]:
        print(f"FAIL: the sides stopped at different steps: torch {[l for l, _ in theirs]}, ours {[l for l, _ in ours]}")
        return 1
    differing_steps, differing_keys = 0, 0
    for (label, expected), (_, got) in zip(theirs, ours):
        keys = compared_keys(expected, got)
        bad, text = describe_differences(keys, expected, got, "torch", "ours")
        differing_keys += len(bad)
        differing_steps += 1 if bad else 0
        print(f"{label:38} {len(keys) - len(bad):2}/{len(keys)} keys equal" + (": " + text if bad else ""))
    only_torch = sorted(set(theirs[0][1]) - set(ours[0][1])) if theirs else []
    only_ours = sorted(set(ours[0][1]) - set(theirs[0][1])) if ours else []
    if only_torch or only_ours:
        print(f"key sets differ: only torch {only_torch}, only ours {only_ours} (counted above as differences)")
    check_expected("torch", theirs)
    check_expected("ours", ours)
    if differing_keys:
        print(f"FAIL: {differing_keys} keys differ in {differing_steps} of {len(theirs)} steps")
        return 1
    print(f"PASS: every compared key equal after each of {len(theirs)} steps "
          f"(timings' total/max/min/avg not compared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
