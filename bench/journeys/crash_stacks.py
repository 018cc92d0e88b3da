#!/usr/bin/env python3
"""Native stacks of a GPU check's job that dies of a signal, or hangs (the GPU machines have no
debugger): crash_stack.c, preloaded, writes the faulting thread's frames to stderr as
`library(+offset)[address]`, and every thread's on SIGUSR2 (request_stacks); this names each
frame of a library that keeps its symbol table (cudascope's do) by the nearest symbol before
the offset, with nm.

As a module: build_library(directory) -> the preload's path; job_environment(path) -> the
variables to run a job with (the preload and Python's faulthandler); request_stacks(process)
-> asks a hung job for every thread's stack; symbolize(text).
As a command:
  crash_stacks.py --build DIR        builds the preload in DIR, prints its path
  crash_stacks.py LOG...             prints each log's crash stacks, frames named"""
import bisect
import os
import re
import signal
import subprocess
import sys
import time

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crash_stack.c")
FRAME = re.compile(r"^(?P<library>/[^()\s]+)\(\+(?P<offset>0x[0-9a-f]+)\)\[0x[0-9a-f]+\]$")
STACK_START = ("crash_stack: fatal signal", "crash_stack: thread ")
STACK_END = "crash_stack: end of stack"
# How long a job's threads have to write their stacks once asked: each has 2 s to answer.
REQUEST_WAIT_S = 10


def build_library(directory):
    """Compiles crash_stack.c into DIRECTORY; its path. Raises CalledProcessError with the
    compiler's message."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "libcrash_stack.so")
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", path, SOURCE], check=True, capture_output=True, text=True)
    return path


def job_environment(library):
    """The variables a job runs with to leave its stacks: the preload, ahead of any the
    environment has, and Python's own stacks of every thread."""
    preload = " ".join(p for p in (library, os.environ.get("LD_PRELOAD", "")) if p)
    return {"LD_PRELOAD": preload, "PYTHONFAULTHANDLER": "1"}


def request_stacks(process, wait_s=REQUEST_WAIT_S):
    """Asks every process of PROCESS's group (started with start_new_session=True, so a job's
    children answer too) for every thread's stack, then gives them WAIT_S seconds to write it;
    the job runs on. Each process writes to its own stderr."""
    try:
        os.killpg(process.pid, signal.SIGUSR2)
    except ProcessLookupError:
        return
    time.sleep(wait_s)


class Symbols:
    """Function symbols of shared libraries by offset and size, read once per library with nm.
    An offset outside every symbol (a stripped library's internal code) gets no name rather
    than the nearest exported one's, which would mislead."""

    def __init__(self):
        self.tables = {}

    def table(self, library):
        if library not in self.tables:
            entries = []
            for dynamic in ([], ["-D"]):
                try:
                    run = subprocess.run(["nm", "-C", "-S", "--defined-only", *dynamic, library], capture_output=True,
                                         text=True)
                except OSError:  # no nm (binutils): frames stay as backtrace() wrote them
                    break
                for line in run.stdout.splitlines():
                    parts = line.split(" ", 3)  # address size type name; symbols without a size are left out
                    if len(parts) == 4 and parts[2] in "tTwWiI":
                        entries.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
                if entries:
                    break  # the full table when there is one; the dynamic one otherwise
            entries.sort()
            self.tables[library] = entries
        return self.tables[library]

    def name(self, library, offset):
        """`symbol+0xN` for OFFSET in LIBRARY, or None where no symbol spans it."""
        entries = self.table(library)
        i = bisect.bisect_right(entries, (offset, float("inf"), "")) - 1
        if i < 0:
            return None
        address, size, symbol = entries[i]
        return f"{symbol}+{offset - address:#x}" if offset < address + size else None


def symbolize(text, symbols=None):
    """TEXT's crash stacks (the lines from a STACK_START to a STACK_END), each unnamed frame
    followed by its symbol where one is found; empty when TEXT holds none."""
    symbols = symbols or Symbols()
    out, inside = [], False
    for line in text.splitlines():
        inside = inside or line.startswith(STACK_START)
        if not inside:
            continue
        frame = FRAME.match(line.strip())
        named = symbols.name(frame["library"], int(frame["offset"], 16)) if frame and os.path.exists(frame["library"]) else None
        out.append(f"{line}  <- {named}" if named else line)
        inside = not line.startswith(STACK_END)
    return "\n".join(out)


def main(argv):
    if argv[:1] == ["--build"] and len(argv) == 2:
        print(build_library(argv[1]))
        return 0
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    symbols = Symbols()
    for log in argv:
        with open(log, errors="replace") as f:
            stacks = symbolize(f.read(), symbols)
        if stacks:
            print(f"== {log}\n{stacks}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
