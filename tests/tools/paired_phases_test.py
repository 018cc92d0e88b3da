#!/usr/bin/env python3
"""bench/profiler/paired_phases.py on a virtual clock: a loop whose step time drifts linearly
over the process's life, with and without a recording that costs it a known fraction while it
runs. The recorded phase over its two sides must give the recording's cost and nothing of the
drift, where the before phase alone takes the drift for a cost; the phases must not overlap
the recording's start or stop."""
import unittest

from paired_phases import MARGIN_S, SETTLE_S, paired_phases, recorded_over_sides, shortest_duration


class VirtualLoop:
    """Step times of BASE seconds, growing by DRIFT per second of the process, and by COST while
    a recording runs (from START to STOP); a clock that only steps advance."""

    def __init__(self, base=0.001, drift=0.01, cost=0.0, start=None, stop=None):
        self.now, self.base, self.drift, self.cost, self.start, self.stop = 0.0, base, drift, cost, start, stop

    def clock(self):
        return self.now

    def step(self):
        recording = self.start is not None and self.start <= self.now < self.stop
        self.now += self.base * (1 + self.drift * self.now) * (1 + (self.cost if recording else 0.0))


def run(drift, cost, delay=10.0, phase_s=5.0, warm=3.0):
    duration = shortest_duration(phase_s)
    loop = VirtualLoop(drift=drift, cost=cost, start=delay, stop=delay + duration)
    loop.now = warm
    phases = paired_phases(loop.step, lambda: None, 0.0, delay, duration, phase_s, clock=loop.clock,
                           cpu_clock=loop.clock)
    return phases, loop


class PairedPhasesTest(unittest.TestCase):
    def test_a_linear_drift_cancels_where_the_before_phase_alone_takes_it_for_a_cost(self):
        phases, _ = run(drift=0.01, cost=0.0)  # 1% slower each second: ~9% over the phases
        before_only = (phases["recorded"]["seconds"] / phases["recorded"]["steps"]) / (
            phases["before"]["seconds"] / phases["before"]["steps"])
        self.assertGreater(before_only, 1.05, "the drift alone looks like a cost against the before phase")
        self.assertAlmostEqual(recorded_over_sides(phases), 1.0, delta=0.005)

    def test_the_recordings_cost_is_found_through_the_drift(self):
        for cost in (0.02, 0.10):
            phases, _ = run(drift=0.01, cost=cost)
            self.assertAlmostEqual(recorded_over_sides(phases), 1 + cost, delta=0.005, msg=f"cost {cost}")
            self.assertAlmostEqual(recorded_over_sides(phases, "cpu_seconds"), 1 + cost, delta=0.005)

    def test_phases_hold_blocks_of_their_own_stretch_only(self):
        # A cost of 10x: a block that overlapped the start or the stop, or an after block taken
        # while recording, would move the sides far from the drift-free figure above.
        phases, _ = run(drift=0.0, cost=9.0)
        self.assertAlmostEqual(recorded_over_sides(phases), 10.0, delta=0.01)
        for name in ("before", "recorded", "after"):
            self.assertGreater(phases[name]["steps"], 0, name)
        self.assertAlmostEqual(phases["after"]["seconds"] / phases["after"]["steps"],
                               phases["before"]["seconds"] / phases["before"]["steps"], delta=1e-9)

    def test_an_empty_before_phase_gives_no_ratio(self):
        phases, _ = run(drift=0.0, cost=0.0, delay=4.0, warm=3.0)  # ready 1 s before the start
        self.assertEqual(phases["before"]["steps"], 0, f"nothing ends {MARGIN_S} s before the start")
        self.assertIsNone(recorded_over_sides(phases))

    def test_without_a_duration_there_is_no_after_phase(self):
        loop = VirtualLoop(drift=0.0, start=10.0, stop=float("inf"))
        loop.now = 3.0
        phases = paired_phases(loop.step, lambda: None, 0.0, 10.0, None, 5.0, clock=loop.clock, cpu_clock=loop.clock)
        self.assertNotIn("after", phases)
        self.assertAlmostEqual(recorded_over_sides(phases), 1.0, delta=1e-9)
        self.assertLessEqual(loop.now, 10.0 + SETTLE_S + 5.0 + 0.2, "the loop ends with its last phase")


if __name__ == "__main__":
    unittest.main()
