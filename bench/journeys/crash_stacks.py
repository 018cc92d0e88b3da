#!/usr/bin/env python3
"""Native stacks of a GPU check's job that dies of a signal, or hangs (the GPU machines have no
debugger): crash_stack.c, preloaded, writes the faulting thread's frames to stderr as
`library(+offset)[address]`, and every thread's on SIGUSR2 (request_stacks); this names each
frame of a library that keeps its symbol table (cudascope's do) by the nearest symbol before
the offset, with nm.

As a module: build_library(directory) -> the preload's path; job_environment(path) -> the
variables to run a job with (the preload and Python's faulthandler); run_job(command, log,
timeout) -> runs a job, and one that hangs leaves every thread's stacks before it is killed;
symbolize(text).
As a command:
  crash_stacks.py --build DIR        builds the preload in DIR, prints its path
  crash_stacks.py LOG...             prints each log's crash stacks, frames named"""
import bisect
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crash_stack.c")
FRAME = re.compile(r"^(?P<library>/[^()\s]+)\(\+(?P<offset>0x[0-9a-f]+)\)\[0x[0-9a-f]+\]$")
STACK_START = ("crash_stack: fatal signal", "crash_stack: thread ")
STACK_END = "crash_stack: end of stack"
THREADS_END = "crash_stack: end of threads"
# crash_stack.c gives each thread 2 s to write its stack; a process gets that for each of its
# threads and a little more, then the next process is asked.
THREAD_ANSWER_S = 2
# A Python process that is sent SIGABRT writes its Python stacks (faulthandler) and ends.
ABORT_WAIT_S = 5


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


def session_processes(session):
    """The ids of the processes still in SESSION (a job started with start_new_session=True:
    its own id), the job first, then its children in the order they were started."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # after the command's name, which may hold spaces
        except (OSError, IndexError):
            continue  # ended meanwhile
        if int(fields[3]) == session:  # the session id, the 6th field of stat
            found.append(int(entry))
    return sorted(found, key=lambda pid: (pid != session, pid))


def thread_count(pid):
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def count_in(path, text):
    with open(path, errors="replace") as f:
        return f.read().count(text)


def wait_for(condition, seconds):
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)


def request_stacks(session, log_path):
    """Asks each process of SESSION in turn for every thread's native stack (SIGUSR2, which
    crash_stack.c answers), waiting for one process's stacks in LOG_PATH, where the job
    writes, before asking the next, so that two processes' stacks never mix; the job runs on."""
    for pid in session_processes(session):
        written = count_in(log_path, THREADS_END)
        try:
            os.kill(pid, signal.SIGUSR2)
        except ProcessLookupError:
            continue
        wait_for(lambda: count_in(log_path, THREADS_END) > written, THREAD_ANSWER_S * thread_count(pid) + 1)


def abort_for_python_stacks(session):
    """Sends each process of SESSION SIGABRT in turn, waiting for it to end: a Python process
    writes its Python stacks first (PYTHONFAULTHANDLER), then its native stack (crash_stack.c)."""
    for pid in session_processes(session):
        try:
            os.kill(pid, signal.SIGABRT)
        except ProcessLookupError:
            continue
        wait_for(lambda: not os.path.exists(f"/proc/{pid}/stat") or process_state(pid) == "Z", ABORT_WAIT_S)


def process_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "gone"


def kill_session(session):
    try:
        os.killpg(session, signal.SIGKILL)
    except ProcessLookupError:
        pass


# The sessions of the jobs run_job is running, for kill_live_jobs: a job in a session of its own
# no longer gets the signal that stops the check.
_live_jobs = set()
_live_jobs_lock = threading.Lock()


def kill_live_jobs():
    """Kills every job run_job is running (the check is being stopped)."""
    with _live_jobs_lock:
        for session in _live_jobs:
            kill_session(session)


def run_job(command, log, timeout, env=None):
    """Runs COMMAND in a session of its own, its output appended to the open file LOG; its exit
    status, or None when it ran past TIMEOUT seconds: then each of its processes was asked for
    its threads' native stacks and its Python stacks, which LOG keeps, and killed. Whatever ends
    this call, no process of the job outlives it (leftover children included)."""
    job = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    with _live_jobs_lock:
        _live_jobs.add(job.pid)
    try:
        return job.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        log.write(f"crash_stack: no end after {timeout:g} s: every thread's stack of each process follows\n")
        log.flush()
        request_stacks(job.pid, log.name)
        abort_for_python_stacks(job.pid)
        return None
    finally:
        kill_session(job.pid)
        job.wait()
        with _live_jobs_lock:
            _live_jobs.discard(job.pid)


def no_core_files():
    """Jobs this process starts write no core file when they are aborted (a PyTorch process's
    core is gigabytes)."""
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, hard))


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
