#!/usr/bin/env python3
"""bench/journeys/sampling_stress_check.py on the sim backend, where the sampler switches the
sim source's kernel records as it does CUPTI's: runs at once (--parallel) each get their own
port and log, a sampled run is seen switching (its last scrape), and the check passes; a job
that dies of a signal fails it, named, with its native stack; a variant's runs alternate with
the plain ones and are counted apart; a job that hangs fails it, killed after --run-timeout,
with the stacks of its threads (of cudascope run's and of the program's).

  sampling_stress_test.py CLI"""
import os
import subprocess
import sys
import tempfile

from check_support import expect

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "..", "..", "bench", "journeys", "sampling_stress_check.py")


def stress(cli, out, job, *options):
    env = dict(os.environ, CUDASCOPE_BACKEND="sim")
    return subprocess.run([sys.executable, CHECK, "--cli", cli, "--out", out, *options, "--", *job],
                          env=env, capture_output=True, text=True, timeout=240)


def main():
    cli = sys.argv[1]
    demo = [cli, "demo", "--iterations", "200", "--kernel-ms", "5", "--hold", "0.6"]
    with tempfile.TemporaryDirectory() as out:
        passing = stress(cli, out, demo, "--runs", "3", "--parallel", "3", "--control", "1")
        expect(passing.returncode == 0, "three sampled runs at once and a control pass", passing)
        expect("PASS: 3 runs with 5 ms of kernel records in every 10 ms: 0 did not end normally" in passing.stdout,
               "the summary counts the sampled runs", passing)
        for n in range(1, 5):
            expect(os.path.exists(os.path.join(out, f"run_{n}.log")), f"run {n} has its own log", passing)
        expect("1 recording every kernel: 0 did not" in passing.stdout, "the control run is counted", passing)
    with tempfile.TemporaryDirectory() as out:
        crashing = stress(cli, out, ["sh", "-c", "kill -SEGV $$"], "--runs", "2", "--parallel", "2")
        expect(crashing.returncode == 1, "a job that dies of SIGSEGV fails the check", crashing)
        expect("the job ended by SIGSEGV" in crashing.stdout, "the signal is named", crashing)
        expect("FAIL: 2 runs with 5 ms of kernel records in every 10 ms: 2 did not end normally" in crashing.stdout,
               "the summary counts both", crashing)
        expect("crash_stack: fatal signal SIGSEGV" in crashing.stdout, "the native stack is shown", crashing)
    with tempfile.TemporaryDirectory() as out:
        # A variant's variables reach its runs only: here they make the job crash.
        job = ["sh", "-c", 'if [ -n "$STRESS_TEST_CRASH" ]; then kill -SEGV $$; fi']
        varied = stress(cli, out, job, "--runs", "2", "--parallel", "2", "--variant", "crashing:STRESS_TEST_CRASH=1")
        expect(varied.returncode == 1, "a variant's crashes fail the check", varied)
        for n, kind, end in ((1, "sampled", "exit 0"), (2, "sampled, crashing", "exit 139"),
                             (3, "sampled", "exit 0"), (4, "sampled, crashing", "exit 139")):
            expect(f"run {n}/4 ({kind}): {end}" in varied.stdout, f"run {n} is {kind} (alternating)", varied)
        expect("2 runs with 5 ms of kernel records in every 10 ms: 0 did not end normally" in varied.stdout and
               "2 more with crashing (STRESS_TEST_CRASH=1): 2 did not" in varied.stdout,
               "the summary counts each variant apart", varied)
        refused = stress(cli, out, job, "--variant", "no-assignment")
        expect(refused.returncode == 2 and "--variant 'no-assignment'" in refused.stderr,
               "a malformed variant is refused, named", refused)
    with tempfile.TemporaryDirectory() as out:
        hanging = stress(cli, out, ["sleep", "600"], "--runs", "1", "--run-timeout", "2")
        expect(hanging.returncode == 1, "a job that hangs fails the check", hanging)
        expect("run 1/1 (sampled): hung (no end in 2 s), its stacks written and killed" in hanging.stdout,
               "the hang is named", hanging)
        with open(os.path.join(out, "run_1.log")) as f:
            log = f.read()
        # cudascope run and the program it started, one after the other, then each aborted.
        expect(log.count("crash_stack: end of threads") == 2, "each process wrote its threads' stacks", log)
        dumps = log.split("crash_stack: every thread's stack of process ")[1:]
        expect(len(dumps) == 2 and all(d.count("crash_stack: end of threads") == 1 for d in dumps),
               "one process's stacks end before the next's begin", log)
        expect("nanosleep" in dumps[-1], "the program's stack shows where it waits", log)
        expect("crash_stack: fatal signal SIGABRT" in log, "then each was aborted", log)
    print("ok")


if __name__ == "__main__":
    main()
