#!/usr/bin/env python3
"""bench/profiler/window_phases.py on a virtual clock: a loop whose step time drifts over the
process's life and costs a known fraction more while records are on, cut into blocks, with the
sampler's schedule of switches. Each window over its sides must give the cost and nothing of
the drift; a block across a switch, or inside the settling time after one, must not count; a
plain loop over a drawn schedule must give 1."""
import statistics
import unittest

from window_phases import (SETTLE_NS, read_switches, run_blocks, stretch_means, stretches, synthetic_switches,
                           window_costs)

MS = 1_000_000


class VirtualLoop:
    """Steps of BASE_NS growing by DRIFT per second of the process, COST more while records are on
    (the SWITCHES' stretches), and SETTLE_COST more in each state's settling time after a switch
    to it ends (after the states in SETTLING); a clock that only steps advance. CPU time runs
    with the wall clock."""

    def __init__(self, switches, base_ns=2 * MS, drift=0.01, cost=0.0, settle_cost=0.0, settling=("on", "off"),
                 settle_ns=SETTLE_NS):
        self.now, self.base_ns, self.drift, self.cost, self.settle_cost = 0, base_ns, drift, cost, settle_cost
        self.spans = stretches(switches)
        self.settles = [(end, end + settle_ns[state]) for state, _, end in switches if state in settling]

    def clock(self):
        return self.now

    def on(self):
        return any(state == "on" and start <= self.now < until for state, start, until in self.spans)

    def settling(self):
        return any(start <= self.now < until for start, until in self.settles)

    def step(self):
        factor = (1 + self.drift * self.now / 1e9) * (1 + (self.cost if self.on() else 0.0))
        factor *= 1 + (self.settle_cost if self.settling() else 0.0)
        self.now += int(self.base_ns * factor)


def switches_from(schedule, took_ns=MS // 2):
    """The drawn schedule as real switches, each taking TOOK_NS."""
    return [(state, at, at + took_ns) for state, at, _ in schedule]


def blocks_of(loop, seconds=40, block_steps=10):
    return run_blocks(loop.step, lambda: None, seconds, block_steps, clock=loop.clock, cpu_clock=loop.clock)


class WindowPhasesTest(unittest.TestCase):
    def setUp(self):
        self.switches = switches_from(synthetic_switches(0, 41 * 10**9, 500 * MS, 1000 * MS, seed=3))

    def test_each_window_over_its_sides_finds_the_cost_through_the_drift(self):
        for cost in (0.01, 0.05):
            loop = VirtualLoop(self.switches, drift=0.01, cost=cost)
            blocks = blocks_of(loop)
            costs = window_costs(blocks, self.switches)
            self.assertGreater(len(costs), 15, "most of 40 periods give a window with both sides")
            self.assertAlmostEqual(statistics.median(costs), 1 + cost, delta=0.003, msg=f"cost {cost}")
            self.assertAlmostEqual(statistics.median(window_costs(blocks, self.switches, figure=2)), 1 + cost,
                                   delta=0.003)

    def test_a_plain_loop_over_a_drawn_schedule_gives_one(self):
        loop = VirtualLoop([], drift=0.02)
        blocks = blocks_of(loop)
        drawn = synthetic_switches(blocks[0][0], blocks[-1][1], 500 * MS, 1000 * MS, seed=1)
        self.assertAlmostEqual(statistics.median(window_costs(blocks, drawn)), 1.0, delta=0.003)

    def test_blocks_across_a_switch_or_in_its_settling_time_do_not_count(self):
        # Ten times slower while settling and on: a block counted from the settling time, or
        # straddling a switch into an off stretch, would move the ratio far from 10.
        loop = VirtualLoop(self.switches, drift=0.0, cost=9.0, settle_cost=5.0)
        costs = window_costs(blocks_of(loop), self.switches)
        self.assertTrue(costs)
        for c in costs:
            self.assertAlmostEqual(c, 10.0, delta=0.01)

    def test_blocks_in_a_settling_time_do_not_count_even_where_they_are_most_of_a_stretch(self):
        # Windows of 100 ms whose first 80 ms settle 10% slower, in blocks of one step: counted,
        # the settling blocks would be most of each window's and move its median to 1.1.
        settle = {"on": 80 * MS, "off": 0}
        schedule = switches_from(synthetic_switches(0, 11 * 10**9, 100 * MS, 200 * MS, seed=5))
        loop = VirtualLoop(schedule, base_ns=MS, drift=0.0, settle_cost=0.1, settling=("on",), settle_ns=settle)
        costs = window_costs(blocks_of(loop, seconds=10, block_steps=1), schedule, settle_ns=settle)
        self.assertGreater(len(costs), 10)
        for c in costs:
            self.assertAlmostEqual(c, 1.0, delta=0.01)

    def test_the_drawn_schedule_rounds_slots_as_the_sampler_does(self):
        # SamplingPlan::slots() rounds period / window half away from zero (llround): 2.5 -> 3.
        drawn = synthetic_switches(0, 10**9, 400 * MS, 1000 * MS, seed=2)
        self.assertEqual(drawn[1][1] - drawn[0][1], 1000 * MS // 3)

    def test_stretches_without_a_block_give_no_figure(self):
        loop = VirtualLoop(self.switches, drift=0.0)
        blocks = blocks_of(loop, seconds=5)
        means = stretch_means(blocks, self.switches)
        self.assertEqual(len(means), len(self.switches) - 1)
        self.assertTrue(all(m[1] is None for m in means[12:]), "stretches after the last block are empty")
        self.assertTrue(any(m[1] is not None for m in means[:8]))

    def test_the_drawn_schedule_has_one_window_a_period(self):
        drawn = synthetic_switches(0, 10 * 10**9, 250 * MS, 1000 * MS, seed=7)
        self.assertEqual(len(drawn), 20)
        for period, (on, off) in enumerate(zip(drawn[::2], drawn[1::2])):
            self.assertEqual((on[0], off[0]), ("on", "off"))
            self.assertEqual(off[1] - on[1], 250 * MS)
            self.assertTrue(period * 10**9 <= on[1] and off[1] <= (period + 1) * 10**9)

    def test_the_switch_log_is_read_and_a_bad_line_named(self):
        self.assertEqual(read_switches(["on 10 20\n", "\n", "off 30 35\n"]), [("on", 10, 20), ("off", 30, 35)])
        for bad in ("on 10\n", "of 1 2\n", "on -1 2\n", "on 1 x\n"):
            with self.assertRaisesRegex(ValueError, "line 2"):
                read_switches(["on 1 2\n", bad])


if __name__ == "__main__":
    unittest.main()
