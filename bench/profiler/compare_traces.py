"""Compares the kernels of the recorded steps in a cudascope trace and a torch.profiler trace
of the same script, and checks the NVTX nesting in the cudascope trace. Exit 1 on mismatch."""
import collections
import gzip
import json
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


ours = load(sys.argv[1])["traceEvents"]
theirs = load(sys.argv[2])["traceEvents"]
first_step, steps = int(sys.argv[3]), int(sys.argv[4])
wanted = {f"step {i}" for i in range(first_step, first_step + steps)}

# cudascope: kernels whose launch call lies inside one of the wanted step ranges.
ranges = []  # (name, begin, end, tid, depth)
stack = collections.defaultdict(list)
for e in ours:
    if e.get("cat") == "nvtx" and e["ph"] in "BE":
        key = (e["pid"], e["tid"])
        if e["ph"] == "B":
            stack[key].append(e)
        else:
            b = stack[key].pop()
            ranges.append((b["name"], b["ts"], e["ts"], e["tid"], len(stack[key])))
step_ranges = [r for r in ranges if r[0] in wanted]
calls = {}
for e in ours:
    if e.get("cat") in ("cuda_runtime", "cuda_driver"):
        calls[e["args"]["correlation"]] = e
# Each step ends with a synchronize inside its range, so on one timeline every kernel of the
# recorded steps runs inside the span of their ranges.
window = (min(r[1] for r in step_ranges), max(r[2] for r in step_ranges)) if step_ranges else (0, -1)
ours_kernels = []
launches_outside_phase = 0
by_phase = collections.Counter()
threads = set()
for e in ours:
    if e.get("cat") != "kernel" or not window[0] <= e["ts"] <= window[1]:
        continue
    ours_kernels.append(e["name"])
    call = calls.get(e["args"]["correlation"])
    if call is None:
        launches_outside_phase += 1
        continue
    # Autograd launches the backward pass from its own thread while the range is open on the
    # main thread: a launch belongs to the phase whose range spans it in time.
    inside = [r for r in step_ranges if r[1] <= call["ts"] <= r[2]]
    if not inside:
        launches_outside_phase += 1
    else:
        phases = [r for r in ranges if r[0] in ("forward", "backward", "optimizer") and r[1] <= call["ts"] <= r[2]
                  and inside[0][1] <= r[1] and r[2] <= inside[0][2]]
        launches_outside_phase += not phases
        by_phase[phases[0][0] if phases else "none"] += 1
        threads.add(call["tid"])
theirs_kernels = [e["name"] for e in theirs if e.get("cat") == "kernel"]
a, b = collections.Counter(ours_kernels), collections.Counter(theirs_kernels)
print(f"cudascope: {len(ours_kernels)} kernels in {len(step_ranges)} step ranges; torch.profiler: {len(theirs_kernels)} kernels")
print(f"distinct names: cudascope {len(a)}, torch.profiler {len(b)}")
nesting_ok = all(r[4] == 1 for r in ranges if r[0] in ("forward", "backward", "optimizer")) and all(r[4] == 0 for r in step_ranges)
print(f"nvtx: {len(ranges)} ranges; phases nested one level inside steps: {nesting_ok}; launches outside a phase range: {launches_outside_phase}")
print(f"launches by phase: {dict(by_phase)} from {len(threads)} threads")
only_ours, only_theirs = a - b, b - a
for name, count in list(only_ours.items())[:10]:
    print("  only cudascope:", count, name[:160])
for name, count in list(only_theirs.items())[:10]:
    print("  only torch.profiler:", count, name[:160])
ok = a == b and nesting_ok and len(step_ranges) == steps and launches_outside_phase == 0
print("MATCH" if ok else "MISMATCH")
sys.exit(0 if ok else 1)
