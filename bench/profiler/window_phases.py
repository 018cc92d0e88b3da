"""A recording's cost measured inside one process, in windows (run_window_overhead.py): the
recording switches its per-kernel records on and off many times a minute (a sampled
metrics-only recording whose windows are half of each period, CUDASCOPE_METRICS_SAMPLE_LOG
naming each switch), while the loop runs in short blocks of steps, each timed on
CLOCK_MONOTONIC. Each stretch of records on is set against the stretches of records off on
either side of it, a second or so apart: what moves between processes (15-25% on a launch-bound
loop) and what drifts within one over tens of seconds (-4% to +7%) cancels, and the median of
many such ratios resolves a cost of a percent.

A block counts for a stretch when it lies wholly inside it and begins SETTLE_NS after the switch
that opened it ended. A plain process gets
the same analysis over a schedule drawn as the sampler draws its own (synthetic_switches): its
ratios are the method's own spread, with nothing switched.

Torch-free, so the estimator is tested on a virtual clock (tests/tools/window_phases_test.py);
overhead_workloads.py --windows runs run_blocks on the PyTorch loops."""
import math
import random
import statistics
import time
from fractions import Fraction

# How long after a switch ends its stretch's blocks start to count: after "on", CUPTI's switch
# done and its first buffers handed out; after "off", also the window's last records flushed
# (every 200 ms) and taken in by the recording's threads, whose CPU the process's time counts.
SETTLE_NS = {"on": 50_000_000, "off": 250_000_000}


def run_blocks(step, synchronize, seconds, block_steps, clock=time.monotonic_ns, cpu_clock=time.process_time_ns):
    """Blocks of BLOCK_STEPS steps for SECONDS, each waited for on the device: a list of
    [begin_ns, end_ns, cpu_ns, steps], BEGIN and END on CLOCK (the switch log's clock)."""
    blocks = []
    synchronize()
    stop = clock() + int(seconds * 1e9)
    while True:
        begin, cpu_begin = clock(), cpu_clock()
        if begin >= stop:
            return blocks
        for _ in range(block_steps):
            step()
        synchronize()
        blocks.append([begin, clock(), cpu_clock() - cpu_begin, block_steps])


def read_switches(lines):
    """The switch log's lines ("on|off START END") as [(state, start_ns, end_ns)]; ValueError
    naming the first line that is not one."""
    switches = []
    for number, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 3 or fields[0] not in ("on", "off") or not all(f.isdigit() for f in fields[1:]):
            raise ValueError(f"line {number}: {line.strip()!r} is not 'on|off START END'")
        switches.append((fields[0], int(fields[1]), int(fields[2])))
    return switches


def synthetic_switches(first_ns, last_ns, window_ns, period_ns, seed=0):
    """Switches of no length as the sampler would draw them from FIRST to LAST: each period is
    cut into period / window slots, rounded, and one of them, drawn at random, is on."""
    slots = max(1, int(period_ns / window_ns + 0.5))  # llround's halves, as SamplingPlan::slots()
    slot_ns = period_ns // slots
    draw = random.Random(seed)
    switches = []
    for period_start in range(first_ns, last_ns, period_ns):
        on_at = period_start + draw.randrange(slots) * slot_ns
        switches += [("on", on_at, on_at), ("off", on_at + slot_ns, on_at + slot_ns)]
    return switches


def stretches(switches):
    """[(state, from_ns, until_ns)]: from each switch's end to the next switch's start (the last
    stretch ends with the last switch: nothing is known to hold after it)."""
    return [(state, end, following[1]) for (state, _, end), following in zip(switches, switches[1:])]


def stretch_means(blocks, switches, settle_ns=SETTLE_NS):
    """For each stretch: (state, seconds per step, CPU seconds per step), the median over its
    blocks, or None per figure where no block lies wholly in it after its state's settling time
    (SETTLE_NS: {state: ns}). A median, not a mean: a launch-bound loop's blocks have outliers
    (a garbage collection, the host's other work) that would move a half second's mean by more
    than the cost sought."""
    blocks = sorted(blocks)
    means = []
    for state, start, until in stretches(switches):
        inside = [b for b in blocks if b[0] >= start + settle_ns[state] and b[1] <= until]
        if not inside:
            means.append((state, None, None))
            continue
        means.append((state, statistics.median((b[1] - b[0]) / b[3] / 1e9 for b in inside),
                      statistics.median(b[2] / b[3] / 1e9 for b in inside)))
    return means


def window_costs(blocks, switches, figure=1, settle_ns=SETTLE_NS):
    """Each on-stretch's time per step (FIGURE 1: wall, 2: CPU) over the mean of the nearest
    off-stretches with blocks before and after it; on-stretches without both give none."""
    means = [(m[0], m[figure]) for m in stretch_means(blocks, switches, settle_ns)]
    costs = []
    for i, (state, value) in enumerate(means):
        if state != "on" or value is None:
            continue
        before = next((v for s, v in reversed(means[:i]) if s == "off" and v is not None), None)
        after = next((v for s, v in means[i + 1:] if s == "off" and v is not None), None)
        if before is not None and after is not None:
            costs.append(value / ((before + after) / 2))
    return costs



def median_interval(values, level=0.95):
    """(low, high): the interval between two order statistics that holds the median of what VALUES
    were drawn from with at least LEVEL's chance, whatever its distribution (values drawn
    independently): the k-th lowest and the k-th highest, k the largest for which fewer than k
    values below the median has a chance of at most (1 - LEVEL) / 2 (binomial, one half). None
    for too few values (under 6 at 0.95). The windows' spread is wide and their median alone says
    nothing of how many more windows a verdict needs; this does."""
    ordered = sorted(values)
    n = len(ordered)
    tail = Fraction(1 - level) / 2 * 2**n  # in counts of the 2**n equally likely sign patterns
    below, k = 0, 0
    while k < n:
        below += math.comb(n, k)  # patterns with at most k values below the median
        if below > tail:
            break
        k += 1
    return (ordered[k - 1], ordered[n - k]) if k > 0 else None
