// Preloaded into a GPU check's job (LD_PRELOAD, by crash_stacks.py): on a fatal signal it
// writes the faulting thread's native stack to stderr, then lets the signal take its course.
// A job that dies of SIGSEGV otherwise leaves only its exit status, and the GPU machines have
// no debugger.
//
// It chains with the program's own handlers: installed first (a constructor, before Python
// starts), it is what Python's faulthandler finds as the previous handler, re-raises to after
// printing the Python stacks; a program that installs a handler of its own without chaining
// simply keeps it. Only async-signal-safe calls in the handler: write, backtrace (libgcc's
// unwinder, loaded at start-up so the handler does not load it) and backtrace_symbols_fd.
#define _GNU_SOURCE
#include <execinfo.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

enum { kMaxFrames = 64 };
static const int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static struct sigaction previous[NSIG];

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

static void on_fatal_signal(int signal_number, siginfo_t* info, void* context) {
  (void)context;
  void* frames[kMaxFrames];
  write_text("crash_stack: fatal signal ");
  const char* name = sigabbrev_np(signal_number);
  write_text("SIG");
  write_text(name != NULL ? name : "?");
  write_text(" at address ");
  write_hex((uintptr_t)info->si_addr);
  write_text(", native stack of the faulting thread:\n");
  const int count = backtrace(frames, kMaxFrames);
  backtrace_symbols_fd(frames, count, STDERR_FILENO);
  write_text("crash_stack: end of stack\n");
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
}
