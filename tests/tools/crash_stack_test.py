#!/usr/bin/env python3
"""A program that dies of SIGSEGV in a shared library, run with bench/journeys/crash_stack.c
preloaded: it must still die of SIGSEGV (the preload lets the signal take its course), its
stderr must hold the faulting thread's stack, and crash_stacks.symbolize must name the hidden
library function that faulted, with its callers below it.

  crash_stack_test.py CC"""
import os
import signal
import subprocess
import sys
import tempfile

from crash_stacks import build_library, job_environment, symbolize

# The faulting function is hidden, as cudascope's libraries' internals are: backtrace() cannot
# name it (only exported symbols), the symbolizer must, from the library's symbol table.
LIBRARY = r"""
__attribute__((noinline, visibility("hidden"))) int faulting_read(volatile int* p) { return *p + 1; }
int crash_in_library(volatile int* p) { return faulting_read(p) + 1; }
"""
PROGRAM = r"""
int crash_in_library(volatile int* p);
__attribute__((noinline)) int caller_of_the_crash(volatile int* p) { return crash_in_library(p) + 1; }
int main(void) { return caller_of_the_crash((volatile int*)0); }
"""


def compile_program(cc, directory):
    for name, text in (("crasher.c", LIBRARY), ("main.c", PROGRAM)):
        with open(os.path.join(directory, name), "w") as f:
            f.write(text)
    library = os.path.join(directory, "libcrasher.so")
    program = os.path.join(directory, "crasher")
    # Frame pointers and no inlining across the two, so the stack is the one the source says.
    flags = ["-O1", "-fno-omit-frame-pointer", "-rdynamic"]
    subprocess.run([cc, "-shared", "-fPIC", *flags, "-o", library, os.path.join(directory, "crasher.c")], check=True)
    subprocess.run([cc, *flags, "-o", program, os.path.join(directory, "main.c"), library,
                    f"-Wl,-rpath,{directory}"], check=True)
    return program


def main():
    cc = sys.argv[1] if len(sys.argv) > 1 else "cc"
    failures = []
    with tempfile.TemporaryDirectory() as directory:
        program = compile_program(cc, directory)
        env = dict(os.environ, **job_environment(build_library(directory)))
        run = subprocess.run([program], env=env, capture_output=True, text=True)
        if run.returncode != -signal.SIGSEGV:
            failures.append(f"the program ended with {run.returncode}, not SIGSEGV")
        stacks = symbolize(run.stderr)
        if "crash_stack: fatal signal SIGSEGV" not in stacks:
            failures.append("no crash stack on stderr")
        lines = stacks.splitlines()
        faulting = next((i for i, line in enumerate(lines) if "<- faulting_read+" in line), None)
        if faulting is None:
            failures.append("the faulting function is not named")
        elif not all(any(caller in line for line in lines[faulting + 1:])
                     for caller in ("crash_in_library", "caller_of_the_crash")):
            failures.append("its callers are not below it")
        if not stacks.rstrip().endswith("crash_stack: end of stack"):
            failures.append("the stack is not ended")
    if failures:
        print("FAIL: " + "; ".join(failures) + "\n" + (stacks or run.stderr))
        return 1
    print("PASS: the faulting function and its callers named\n" + stacks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
