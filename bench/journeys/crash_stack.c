// Preloaded into a GPU check's job (LD_PRELOAD, by crash_stacks.py): on a fatal signal it
// writes the faulting thread's native stack to stderr, then lets the signal take its course.
// A job that dies of SIGSEGV otherwise leaves only its exit status, and the GPU machines have
// no debugger. On SIGUSR2 (what a check sends a job that hangs) it writes every thread's stack
// and the job runs on: where each thread waits is what a hang leaves to go on.
//
// It chains with the program's own handlers: installed first (a constructor, before Python
// starts), it is what Python's faulthandler finds as the previous handler, re-raises to after
// printing the Python stacks; a program that installs a handler of its own without chaining
// simply keeps it. The handlers call write, open, read, close, nanosleep and raw system calls,
// which are async-signal-safe, and backtrace and backtrace_symbols_fd, which are not quite:
// libgcc's unwinder is loaded at start-up so that a handler does not load it, but it takes a
// lock of its own, so a thread stopped inside the unwinder (a C++ throw) cannot answer. A
// hung job is killed once asked, so such a thread costs its stack (its 2 s run out), no more.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { kMaxFrames = 64 };
static const int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static struct sigaction previous[NSIG];
static int thread_stack_signal;      // a real-time signal: each thread writes its own stack
static volatile pid_t answering;     // the thread asked for its stack, 0 once it has written it
static volatile int dumping;         // a dump of every thread is under way

static void write_text(const char* text) {
  ssize_t ignored = write(STDERR_FILENO, text, strlen(text));
  (void)ignored;
}

// 0x-prefixed hexadecimal without printf (not async-signal-safe).
static void write_hex(uintptr_t value) {
  char digits[2 + 2 * sizeof value + 1];
  char* end = digits + sizeof digits - 1;
  char* p = end;
  *p = '\0';
  do {
    *--p = "0123456789abcdef"[value & 0xf];
    value >>= 4;
  } while (value != 0);
  *--p = 'x';
  *--p = '0';
  write_text(p);
}

// VALUE in decimal at OUT (room for 21 characters), '\0'-ended; the end. No printf here either.
static char* put_decimal(char* out, uintptr_t value) {
  char digits[3 * sizeof value];
  int n = 0;
  do digits[n++] = (char)('0' + value % 10); while ((value /= 10) != 0);
  while (n > 0) *out++ = digits[--n];
  *out = '\0';
  return out;
}

static void write_decimal(uintptr_t value) {
  char text[3 * sizeof value + 1];
  put_decimal(text, value);
  write_text(text);
}

static pid_t current_thread(void) { return (pid_t)syscall(SYS_gettid); }

static void write_stack(void) {
  void* frames[kMaxFrames];
  const int count = backtrace(frames, kMaxFrames);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  write_text("crash_stack: end of stack\n");
}

// "crash_stack: thread TID (NAME), native stack:" and the calling thread's frames.
static void write_thread_stack(pid_t tid) {
  char path[64] = "/proc/self/task/", name[32] = "?";
  strcpy(put_decimal(path + strlen(path), (uintptr_t)tid), "/comm");
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    const ssize_t got = read(fd, name, sizeof name - 1);
    name[got > 0 ? got : 0] = '\0';
    if (got > 0 && name[got - 1] == '\n') name[got - 1] = '\0';
    close(fd);
  }
  write_text("crash_stack: thread ");
  write_decimal((uintptr_t)tid);
  write_text(" (");
  write_text(name);
  write_text("), native stack:\n");
  write_stack();
}

// The two handlers below return to the interrupted code, which may be about to read errno.
static void on_thread_stack_signal(int signal_number) {
  (void)signal_number;
  const pid_t self = current_thread();
  if (answering != self) return;  // not asked (a late or stray signal)
  const int saved_errno = errno;
  write_thread_stack(self);
  errno = saved_errno;
  // Only if still the one asked: one that answered after its 2 s must not end the next's wait.
  pid_t expected = self;
  __atomic_compare_exchange_n(&answering, &expected, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

// Asks thread TID for its stack and waits for it, 2 s at most: a thread that has the signal
// blocked, or is stopped in the kernel, does not answer, and the others must still be shown.
static void ask_thread(pid_t tid) {
  __atomic_store_n(&answering, tid, __ATOMIC_RELEASE);
  if (syscall(SYS_tgkill, getpid(), tid, thread_stack_signal) != 0) return;
  const struct timespec pause = {0, 1000000};
  for (int waited = 0; waited < 2000 && __atomic_load_n(&answering, __ATOMIC_ACQUIRE) != 0; ++waited) {
    nanosleep(&pause, NULL);
  }
  if (__atomic_load_n(&answering, __ATOMIC_ACQUIRE) != 0) {
    write_text("crash_stack: no answer from thread ");
    write_decimal((uintptr_t)tid);
    write_text(" in 2 s\n");
  }
}

// Every thread's stack, this one's first. Reads the thread list with getdents64, not
// opendir (which allocates: the hang may be a thread holding malloc's lock).
static void on_dump_request(int signal_number) {
  (void)signal_number;
  if (__atomic_exchange_n(&dumping, 1, __ATOMIC_ACQ_REL)) return;
  const int saved_errno = errno;
  const pid_t self = current_thread();
  write_text("crash_stack: every thread's stack of process ");
  write_decimal((uintptr_t)getpid());
  write_text(", on request (SIGUSR2)\n");
  write_thread_stack(self);
  const int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char entries[4096];
  long got;
  while (fd >= 0 && (got = syscall(SYS_getdents64, fd, entries, sizeof entries)) > 0) {
    for (long at = 0; at < got;) {
      const struct dirent64* entry = (const struct dirent64*)(entries + at);
      at += entry->d_reclen;
      pid_t tid = 0;
      for (const char* c = entry->d_name; *c >= '0' && *c <= '9'; ++c) tid = tid * 10 + (*c - '0');
      if (tid > 0 && tid != self) ask_thread(tid);
    }
  }
  if (fd >= 0) close(fd);
  write_text("crash_stack: end of threads\n");
  __atomic_store_n(&dumping, 0, __ATOMIC_RELEASE);
  errno = saved_errno;
}

static void on_fatal_signal(int signal_number, siginfo_t* info, void* context) {
  (void)context;
  write_text("crash_stack: fatal signal ");
  const char* name = sigabbrev_np(signal_number);
  write_text("SIG");
  write_text(name != NULL ? name : "?");
  write_text(" at address ");
  write_hex((uintptr_t)info->si_addr);
  write_text(", native stack of the faulting thread:\n");
  write_stack();
  // The handler before this one (or the default action) then ends the process as it would have.
  sigaction(signal_number, &previous[signal_number], NULL);
  raise(signal_number);
}

__attribute__((constructor)) static void install_crash_stack(void) {
  void* warm[1];
  backtrace(warm, 1);
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = &on_fatal_signal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i) {
    sigaction(kFatalSignals[i], &action, &previous[kFatalSignals[i]]);
  }
  // SA_RESTART: a thread interrupted in a system call to write its stack carries on with it.
  struct sigaction on_request;
  memset(&on_request, 0, sizeof on_request);
  on_request.sa_flags = SA_RESTART | SA_ONSTACK;
  sigemptyset(&on_request.sa_mask);
  on_request.sa_handler = &on_dump_request;
  sigaction(SIGUSR2, &on_request, NULL);
  thread_stack_signal = SIGRTMIN + 5;  // above those glibc keeps; programs seldom use real-time signals
  on_request.sa_handler = &on_thread_stack_signal;
  sigaction(thread_stack_signal, &on_request, NULL);
}
