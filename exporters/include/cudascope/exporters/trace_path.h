#pragma once
// Where a recorded process writes its trace: `cudascope run -o PATTERN` and CUDASCOPE_TRACE
// accept a pattern, expanded in each recorded process, so that every rank and every worker
// of one run writes a file of its own:
//   %r  the rank: RANK from the process's environment (torchrun, torch.distributed,
//       accelerate set it); "norank" when unset, so a launcher or a helper process that
//       uses CUDA never takes rank 0's name
//   %p  the process id       %h  the host name       %%  a literal '%'
// Any other '%' sequence is an error (checked by `cudascope run` before the program starts).
//
// A file is never written by two processes at once: each recorder holds an advisory lock on
// the file it writes (claim_trace_path), and a process that finds its expanded name already
// held by another live process writes NAME.<pid>.json[.gz] instead (with_pid_suffix).
//
// Thread-safety: free functions, no shared state.

#include <optional>
#include <string>

namespace cudascope::exporters {

// What the directives stand for in one process.
struct TracePathFields {
  std::string rank = "norank";
  std::string pid;
  std::string host;
  // The calling process's: RANK, getpid(), trace_host_name() ("localhost" when empty).
  static TracePathFields of_this_process();
};

// The host our traces name (distributedInfo's "host", %h): CUDASCOPE_TEST_HOSTNAME when set
// (a test setting, docs/ranks.md: a rank taken for another host's), else gethostname();
// "" when neither gives one. A bad CUDASCOPE_TEST_HOSTNAME is reported on stderr and ignored.
std::string trace_host_name();

// The `cudascope run` this process records for: run names itself in CUDASCOPE_RUN_ID for the
// program it starts, and each trace carries the id in its header ("cudascope":{..."run":ID}),
// so that run takes as its own only the files its processes wrote, not those of another run
// given the same pattern (one run per rank under torchrun). Empty when unset.
std::string run_id_of_this_process();
// The run id in the header of the trace file at `path` (plain or gzip); nullopt when the file
// cannot be read, its header is not all there yet, or it names no run (written outside run).
std::optional<std::string> trace_file_run_id(const std::string& path);

// True when `path` holds a directive (%r, %p, %h); "%%" alone is not one.
bool is_trace_path_pattern(const std::string& path);
// Why `pattern` is not a valid pattern ("unknown directive '%x' at character 7 of
// 'trace_%x.json'; use %r, %p, %h or %%"), or empty when it is.
std::string trace_path_pattern_problem(const std::string& pattern);
// The pattern with its directives replaced; an unknown directive is kept as written (the
// caller checked it with trace_path_pattern_problem where an error can still be reported).
std::string expand_trace_path(const std::string& pattern, const TracePathFields& fields);
// "dir/t.json.gz" -> "dir/t.<pid>.json.gz"; a name without ".json" gets ".<pid>" at its end.
std::string with_pid_suffix(const std::string& path, const std::string& pid);

// Takes an exclusive advisory lock (flock) on `path`, creating it if needed, and keeps it
// for the life of the process (the descriptor is close-on-exec, so programs it execs do not
// inherit it). Returns true when this process now holds it; false when another process does
// (its recorder is writing that file now) or the file cannot be opened (the writer reports
// the error when it opens the file itself).
bool claim_trace_path(const std::string& path);

// The file this process should write for `pattern` (CUDASCOPE_TRACE's value): expanded, and
// with `.<pid>` added when the expanded name is written by another process of the run.
// `owner_pid` (CUDASCOPE_TRACE_PID, may be empty) is the process `cudascope run` started:
// with a fixed path, any other process writes the `.<pid>` name, as before patterns existed.
std::string choose_trace_path(const std::string& pattern, const std::string& owner_pid, const TracePathFields& fields);

}  // namespace cudascope::exporters
