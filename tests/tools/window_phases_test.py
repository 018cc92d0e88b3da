#!/usr/bin/env python3
"""bench/profiler/window_phases.py on a virtual clock: a loop whose step time drifts over the
process's life and costs a known fraction more while records are on, cut into blocks, with the
sampler's schedule of switches. Each window over its sides must give the cost and nothing of
the drift; a block across a switch, or inside the settling time after one, must not count; a
plain loop over a drawn schedule must give 1."""
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import unittest

from window_phases import (SETTLE_NS, median_interval, read_switches, run_blocks, stretch_means, stretches,
                           synthetic_switches, window_costs)

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


class MedianIntervalTest(unittest.TestCase):
    def test_ten_values_give_the_second_lowest_and_the_second_highest(self):
        # Of 2**10 sign patterns 11 have at most one value below the median (within 2.5% of them:
        # 25.6), 56 at most two (beyond): k = 2.
        self.assertEqual(median_interval([7, 3, 9, 1, 5, 8, 2, 10, 4, 6]), (2, 9))

    def test_too_few_values_give_no_interval(self):
        self.assertIsNone(median_interval([1.0, 2.0, 3.0, 4.0, 5.0]))  # 2 of 32 patterns: over 2.5% each side
        self.assertEqual(median_interval([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), (1.0, 6.0))
        self.assertIsNone(median_interval([]))

    def test_it_holds_a_skewed_distributions_median_as_often_as_it_says(self):
        draw = random.Random(7)
        median = math.log(2)  # an exponential's, far from its mean (1)
        trials, held = 2000, 0
        for _ in range(trials):
            low, high = median_interval([draw.expovariate(1.0) for _ in range(25)])
            held += low <= median <= high
        # 25 values: the 8th and 18th, which hold it 95.7% of the time; 2000 trials put the count
        # within about 0.5% of that.
        self.assertGreaterEqual(held / trials, 0.94)
        self.assertLessEqual(held / trials, 0.975)

    def test_it_narrows_as_the_values_grow(self):
        draw = random.Random(3)
        values = [draw.gauss(1.0, 0.06) for _ in range(1600)]
        low, high = median_interval(values[:100])
        wide = high - low
        low, high = median_interval(values)
        # Sixteen times the values, a quarter of the width (it shrinks as one over the square root).
        self.assertLess(high - low, wide / 2)
        self.assertLess(low, 1.0)
        self.assertGreater(high, 1.0)


BENCH = os.path.join(os.path.dirname(sys.modules["window_phases"].__file__), "run_window_overhead.py")


class KeptRunsTest(unittest.TestCase):
    """Two folders as two device calls' --keep leave them: a recorded process's blocks and switch
    log, a plain process's blocks, named by loop and run index."""

    def keep_run(self, folder, run_index, cost, seed):
        switches = switches_from(synthetic_switches(0, 41 * 10**9, 500 * MS, 1000 * MS, seed=seed))
        with open(os.path.join(folder, f"switches-mlp-{run_index}"), "w") as f:
            f.writelines(f"{state} {start} {end}\n" for state, start, end in switches)
        for kind, loop in (("recorded", VirtualLoop(switches, cost=cost)), ("plain", VirtualLoop([]))):
            with open(os.path.join(folder, f"blocks-{kind}-mlp-{run_index}.json"), "w") as f:
                json.dump(blocks_of(loop), f)

    def bench(self, *args):
        return subprocess.run([sys.executable, BENCH, *args], capture_output=True, text=True, timeout=120)

    def test_processes_of_several_folders_are_pooled(self):
        with tempfile.TemporaryDirectory() as first, tempfile.TemporaryDirectory() as second:
            self.keep_run(first, 0, 0.04, seed=3)
            self.keep_run(second, 0, 0.04, seed=5)
            self.keep_run(second, 1, 0.04, seed=6)
            one = self.bench("--kept", first, "--loop", "mlp")
            both = self.bench("--kept", first, second)
        self.assertEqual(both.returncode, 1, both.stderr)  # 4% is over the 2% budget
        self.assertIn("6 kept process(es) from 2 folder(s)", both.stdout)
        windows = {name: int(re.search(r"FAIL metrics-only \(windows, mlp\): ([0-9.]+) .*?, (\d+) windows;",
                                       run.stdout)[2]) for name, run in (("one", one), ("both", both))}
        self.assertGreater(windows["one"], 15)
        self.assertGreater(windows["both"], 2.5 * windows["one"], "three recorded processes against one")
        cost = float(re.search(r"FAIL metrics-only \(windows, mlp\): ([0-9.]+)", both.stdout)[1])
        self.assertAlmostEqual(cost, 1.04, delta=0.003)
        null = float(re.search(r"plain over its drawn schedule ([0-9.]+)x", both.stdout)[1])
        self.assertAlmostEqual(null, 1.0, delta=0.003)
        self.assertIn("95% CI", both.stdout)

    def test_a_folder_without_kept_processes_is_an_error(self):
        with tempfile.TemporaryDirectory() as empty:
            run = self.bench("--kept", empty)
            missing = self.bench("--kept", os.path.join(empty, "nothing"))
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("no mlp or transformer process kept in", run.stderr)
        self.assertNotEqual(missing.returncode, 0)
        self.assertIn("no such folder", missing.stderr)
