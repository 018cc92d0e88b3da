#!/usr/bin/env python3
"""bench/profiler/run_overhead_bench.py's comparison of the default trace with torch.profiler's
CUDA-only run, on made-up rounds: each round's trace is set against the same round's torch run,
so a machine that is 40% slower in some rounds than in others moves neither the ratio nor the
verdict, and a round that lacks either run is left out rather than paired with another."""
import contextlib
import io
import unittest

from run_overhead_bench import trace_against_torch_table, trace_over_torch

ROUND_SPEEDS = [1.0, 1.4, 1.1, 1.35, 1.0]  # each round's machine, slower or faster as a whole


def rounds(factor, speeds=ROUND_SPEEDS, torch_cost=1.3, skip=()):
    """results as the bench keeps them: {config: {round: {"mlp_seconds", "transformer_seconds"}}},
    the trace costing `factor` times torch CUDA's time in every round."""
    torch_cuda, trace = {}, {}
    for i, speed in enumerate(speeds):
        torch_s = {"mlp_seconds": 3.0 * speed * torch_cost, "transformer_seconds": 0.4 * speed * torch_cost}
        if i not in skip:
            torch_cuda[i] = torch_s
        trace[i] = {k: v * factor for k, v in torch_s.items()}
    return {"default trace": trace, "torch CUDA": torch_cuda}


def table(results):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        trace_against_torch_table(results)
    return out.getvalue()


class TraceAgainstTorchTest(unittest.TestCase):
    def test_each_round_is_paired_with_its_own_torch_run(self):
        ratios = trace_over_torch(rounds(0.9))
        for loop in ("mlp", "transformer"):
            self.assertEqual(len(ratios[loop]), len(ROUND_SPEEDS))
            for ratio in ratios[loop]:
                self.assertAlmostEqual(ratio, 0.9)
        self.assertEqual(table(rounds(0.9)).count("| yes |"), 2)

    def test_a_trace_dearer_than_torch_in_every_round_is_not_at_or_under_it(self):
        text = table(rounds(1.01))
        self.assertEqual(text.count("| no |"), 2, text)
        self.assertIn("1.0100x", text)

    def test_a_round_without_a_torch_run_is_left_out(self):
        ratios = trace_over_torch(rounds(0.95, skip=(1, 3)))
        self.assertEqual(len(ratios["mlp"]), len(ROUND_SPEEDS) - 2)
        self.assertIn("| 3 |", table(rounds(0.95, skip=(1, 3))))

    def test_no_table_without_both_runs(self):
        self.assertEqual(trace_over_torch({"default trace": {0: {"mlp_seconds": 1.0}}}), {})
        self.assertEqual(table({"plain": {}}), "")


if __name__ == "__main__":
    unittest.main()
