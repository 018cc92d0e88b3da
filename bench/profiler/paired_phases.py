"""The phases of one process of run_paired_overhead.py, around a recording that starts DELAY
seconds after CUDA's start and, given a DURATION, stops DURATION seconds later (`cudascope run
--delay D --duration T`): the loop runs in blocks of steps throughout (50 by default, fewer
for a loop of long steps), and each block that lies wholly inside a phase counts for it:

  before    blocks of the PHASE seconds that end MARGIN before the latest start (the
            recording starts earlier by the time from cuInit to the caller's clock: CUDA's
            initialisation, well under it)
  recorded  blocks that begin SETTLE after the start (CUPTI attached, buffers made) and, with a
            duration, end MARGIN before its stop; PHASE seconds of them
  after     with a duration: blocks that begin SETTLE after the stop (the last flush done);
            PHASE seconds of them

A recording's cost is then its recorded phase against the mean of the phases on either side,
whose middles lie as far before the recorded phase's middle as after it: a drift of the loop's
speed over the process's life that is linear in time cancels, where a
before phase alone takes it for the recording's cost (a plain launch-bound loop moved -4% to
+7% between two phases ten seconds apart on an H100). Torch-free, so the estimator can be
tested without a GPU; overhead_workloads.py --paired runs it on the MLP loop."""
import time

MARGIN_S, SETTLE_S, BLOCK_STEPS = 1.5, 1.0, 50
PHASES = ("before", "recorded", "after")


def phase_of(begin, end, start_at, duration, phase_s):
    """The phase a block from BEGIN to END counts for, or None (times on one clock; START_AT is
    when the recording starts at the latest, DURATION None or its length)."""
    recorded_from = start_at + SETTLE_S
    recorded_until = recorded_from + phase_s
    if duration is not None:
        recorded_until = min(recorded_until, start_at + duration - MARGIN_S)
    if start_at - MARGIN_S - phase_s <= begin and end <= start_at - MARGIN_S:
        return "before"
    if begin >= recorded_from and end <= recorded_until:
        return "recorded"
    if duration is not None:
        after_from = start_at + duration + SETTLE_S
        if begin >= after_from and end <= after_from + phase_s:
            return "after"
    return None


def end_of_phases(start_at, duration, phase_s):
    """When the last phase ends: no block that begins later can count."""
    if duration is None:
        return start_at + SETTLE_S + phase_s
    return start_at + duration + SETTLE_S + phase_s


def shortest_duration(phase_s):
    """The least --duration that leaves a recorded phase of PHASE_S seconds."""
    return SETTLE_S + phase_s + MARGIN_S


def paired_phases(step, synchronize, ready_at, delay, duration=None, phase_s=6.0, clock=time.perf_counter,
                  cpu_clock=time.process_time, block_steps=BLOCK_STEPS):
    """{"before"|"recorded"|"after": {"steps", "seconds", "cpu_seconds"}, "warm_s": S}: each
    phase's blocks of STEP (SYNCHRONIZE waits for the device), and when the loop was ready, S
    seconds after READY_AT (CUDA's start on CLOCK), so an empty before phase says how much
    longer the delay must be. "after" is left out without a DURATION."""
    names = PHASES if duration is not None else PHASES[:2]
    phases = {name: {"steps": 0, "seconds": 0.0, "cpu_seconds": 0.0} for name in names}
    phases["warm_s"] = clock() - ready_at
    start_at = ready_at + delay
    last = end_of_phases(start_at, duration, phase_s)
    while True:
        synchronize()
        begin, cpu_begin = clock(), cpu_clock()
        if begin >= last:
            return phases
        for _ in range(block_steps):
            step()
        synchronize()
        end = clock()
        phase = phase_of(begin, end, start_at, duration, phase_s)
        if phase:
            phases[phase]["steps"] += block_steps
            phases[phase]["seconds"] += end - begin
            phases[phase]["cpu_seconds"] += cpu_clock() - cpu_begin


def per_step(phase, key="seconds"):
    return phase[key] / phase["steps"]


def recorded_over_sides(phases, key="seconds"):
    """The recorded phase's time per step over the mean of the phases beside it (the before
    phase alone where there is no after phase), or None where a phase is empty."""
    sides = [phases[name] for name in ("before", "after") if name in phases]
    if phases["recorded"]["steps"] == 0 or any(side["steps"] == 0 for side in sides):
        return None
    return per_step(phases["recorded"], key) / (sum(per_step(side, key) for side in sides) / len(sides))
