#!/usr/bin/env python3
"""A program that dies of SIGSEGV in a shared library, run with bench/journeys/crash_stack.c
preloaded: it must still die of SIGSEGV (the preload lets the signal take its course), its
stderr must hold the faulting thread's stack, and crash_stacks.symbolize must name the hidden
library function that faulted, with its callers below it. Then a program whose two threads
wait in the library, asked for its stacks as a hung job is (crash_stacks.request_stacks): each
thread's stack must name the function it waits in, and the program must run on to its end.

  crash_stack_test.py CC"""
import os
import signal
import subprocess
import sys
import tempfile
import time

from crash_stacks import build_library, job_environment, request_stacks, symbolize

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
# Two threads waiting, each in a hidden function of its own: one until stdin closes, the other
# for ever (it must not keep the program from ending).
WAITING_LIBRARY = r"""
#include <pthread.h>
#include <unistd.h>
__attribute__((noinline, visibility("hidden"))) void waiting_for_stdin(void) {
  char c;
  while (read(0, &c, 1) > 0) {}
}
__attribute__((noinline, visibility("hidden"))) void* waiting_for_ever(void* unused) {
  for (;;) pause();
  return unused;
}
void wait_in_library(void) {
  pthread_t thread;
  pthread_create(&thread, 0, waiting_for_ever, 0);
  waiting_for_stdin();
}
"""
WAITING_PROGRAM = r"""
void wait_in_library(void);
int main(void) { wait_in_library(); return 0; }
"""


def compile_program(cc, directory, name, library_text, program_text):
    """DIRECTORY/NAME, a program calling into DIRECTORY/libNAME.so."""
    sources = []
    for suffix, text in (("_library.c", library_text), ("_main.c", program_text)):
        sources.append(os.path.join(directory, name + suffix))
        with open(sources[-1], "w") as f:
            f.write(text)
    library = os.path.join(directory, f"lib{name}.so")
    program = os.path.join(directory, name)
    # Frame pointers and no inlining across the two, so the stack is the one the source says.
    flags = ["-O1", "-fno-omit-frame-pointer", "-rdynamic"]
    subprocess.run([cc, "-shared", "-fPIC", *flags, "-o", library, sources[0], "-pthread"], check=True)
    subprocess.run([cc, *flags, "-o", program, sources[1], library, f"-Wl,-rpath,{directory}"], check=True)
    return program


def check_hung_program(cc, directory, env):
    """The failures of a waiting program asked for its stacks: an empty list when it passes."""
    program = compile_program(cc, directory, "waiter", WAITING_LIBRARY, WAITING_PROGRAM)
    log_path = os.path.join(directory, "waiter.log")
    with open(log_path, "w") as log:
        job = subprocess.Popen([program], env=env, stdin=subprocess.PIPE, stderr=log, text=True,
                               start_new_session=True)
        time.sleep(0.5)  # both threads in their waits
        request_stacks(job.pid, log_path)
        job.communicate(input="", timeout=30)  # stdin closed: the program ends
    with open(log_path) as f:
        stderr = f.read()
    stacks = symbolize(stderr)
    failures = []
    if job.returncode != 0:
        failures.append(f"the program asked for its stacks ended with {job.returncode}, not 0")
    for waiting in ("waiting_for_stdin", "waiting_for_ever"):
        if f"<- {waiting}+" not in stacks:
            failures.append(f"no thread's stack names {waiting}")
    if stderr.count("crash_stack: thread ") != 2:
        failures.append("not one stack for each of the two threads")
    if f"every thread's stack of process {job.pid}," not in stderr or stderr.count("crash_stack: end of threads") != 1:
        failures.append("the dump does not name its process, or is not ended once")
    return failures, stacks or stderr


def main():
    cc = sys.argv[1] if len(sys.argv) > 1 else "cc"
    failures = []
    with tempfile.TemporaryDirectory() as directory:
        program = compile_program(cc, directory, "crasher", LIBRARY, PROGRAM)
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
        stacks = stacks or run.stderr
        hung_failures, hung_stacks = check_hung_program(cc, directory, env)
        failures += hung_failures
    if failures:
        print("FAIL: " + "; ".join(failures) + "\n" + stacks + "\n" + hung_stacks)
        return 1
    print("PASS: the faulting function and its callers named; each waiting thread's function named, and the "
          "program ran on\n" + stacks + "\n" + hung_stacks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
