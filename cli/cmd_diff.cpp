// `cudascope diff A B [--fail-if EXPR]... [--json] [--top N]`: what changed between two
// allocator snapshots or two traces, with gates for CI. Exit codes: 0 no gate failed, 1 a
// gate failed, 2 a usage or input error (a bad expression, a file that cannot be read, files
// of two kinds, a metric that does not apply to them, and when gates are asked for, a trace
// that does not hold a whole recording of what they measure).
#include "checks.h"
#include "command.h"
#include "json_output.h"
#include "diff_report.h"

#include <cudascope/analysis/diff_gate.h>
#include <cudascope/analysis/file_kind.h>
#include <cudascope/analysis/loader.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/util/byte_source.h>
#include <cudascope/util/input_budget.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

using namespace cudascope::analysis;

constexpr int kDiffGateFailed = 1;
constexpr int kDiffInputError = 2;

struct DiffOptions {
  std::string a, b;
  std::vector<std::string> gates;
  bool json = false;
  bool quiet = false;
  size_t top = 20;
};

struct DiffInputError {
  std::string message;
};

// Progress of the two loads on stderr: a line each time a file passes another tenth, once
// the loads have taken a second (small files load silently).
class DiffProgress {
 public:
  explicit DiffProgress(bool quiet) : quiet_(quiet), start_(std::chrono::steady_clock::now()) {}
  void report(const char* which, const std::string& path, double fraction) {
    if (quiet_) return;
    const int tenth = static_cast<int>(fraction * 10);
    std::lock_guard lock(mutex_);
    int& last = which[0] == 'A' ? last_a_ : last_b_;
    if (tenth <= last) return;
    last = tenth;
    if (std::chrono::steady_clock::now() - start_ < std::chrono::seconds(1)) return;
    std::fprintf(stderr, "cudascope diff: loading %s %s: %d%%\n", which, path.c_str(), tenth * 10);
  }

 private:
  bool quiet_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  int last_a_ = -1, last_b_ = -1;
};

// One side's load, run on its own thread: a snapshot, or a trace reduced to its stats (the
// model is dropped once its stats are taken, so two large traces are not held at once longer
// than their loads).
struct DiffSide {
  std::optional<Snapshot> snapshot;
  std::optional<TraceStats> stats;
  std::string incomplete;  // traces: why it does not hold its whole recording; empty when it does
  std::string error;
};

// Why a trace does not hold its whole recording, or empty. Only cudascope's traces say whether
// their recording finished; for the others `complete` means read to the end.
std::string incompleteness(const TraceModel& model) {
  if (model.cut_short) return model.cut_short_reason;
  if (!model.complete)
    return "its recording did not finish (the summary cudascope writes at its end is missing or says \"complete\": false)";
  return {};
}

// Reads `input` from its first byte: the stream whose head told its kind (read once, so a
// pipe works).
DiffSide load_side(FileKind kind, cudascope::util::PeekedInput& input, const char* which, DiffProgress& progress) {
  const std::string& path = input.path();
  DiffSide side;
  if (kind == FileKind::snapshot) {
    LoadOptions options;
    options.progress = [&](double f) { progress.report(which, path, f); };
    auto loaded = load_snapshot(input, options);
    if (!loaded) side.error = loaded.error().message();
    else side.snapshot = std::move(loaded).value();
  } else {
    TraceLoadOptions options;
    options.progress = [&](double f) {
      progress.report(which, path, f);
      return true;
    };
    const TraceLoadResult loaded = load_trace(input, options);
    if (!loaded.ok()) {
      side.error = loaded.error;
    } else {
      side.stats = compute_stats(*loaded.model);
      side.incomplete = incompleteness(*loaded.model);
    }
  }
  return side;
}

std::vector<DiffGate> parse_gates(const std::vector<std::string>& texts) {
  std::vector<DiffGate> gates;
  for (const std::string& text : texts) {
    auto parsed = parse_diff_gate(text);
    if (auto* error = std::get_if<std::string>(&parsed)) throw DiffInputError{"--fail-if " + *error};
    gates.push_back(std::get<DiffGate>(std::move(parsed)));
  }
  return gates;
}

// Each file is opened once: its head tells its kind, and its loader takes the same stream.
std::unique_ptr<cudascope::util::PeekedInput> open_side(const std::string& path) {
  std::string error;
  auto input = cudascope::util::PeekedInput::open(path, cudascope::util::input_budget(), error);
  if (!input) throw DiffInputError{LoadError{path, 0, error}.message()};
  return input;
}

FileKind kind_of(cudascope::util::PeekedInput& input) {
  auto kind = detect_file_kind(input);
  if (!kind) throw DiffInputError{kind.error().message()};
  return kind.value();
}

// A gate reads B - A as a change. When a side holds only part of its recording, or none of
// what the gate measures (an empty trace, a run that recorded nothing), B - A is lost data, not
// a change, and a "grew by more than" gate would pass on it: with gates, such a side is an
// input error. Without gates the tables are shown as ever, a cut file with its note.
std::string side_label(const char* which, const std::string& path) { return std::string(which) + " (" + path + ")"; }

void refuse_gates_on_partial_traces(const DiffOptions& o, const DiffSide& a, const DiffSide& b) {
  if (!a.incomplete.empty()) throw DiffInputError{"cannot gate on " + side_label("A", o.a) + ": " + a.incomplete};
  if (!b.incomplete.empty()) throw DiffInputError{"cannot gate on " + side_label("B", o.b) + ": " + b.incomplete};
}

// Instances of what `gate` measures on each side (all names of its kind, not only its NAME:
// one kernel gone from B is a change; every kernel gone is an empty trace). A workload may make
// no copy at all, so a copy gate asks only that the side hold something: kernels, copies or
// ranges.
struct Measured {
  std::int64_t a = 0, b = 0;
  const char* what = "";
};

Measured measured(const DiffGate& gate, const TraceDiff& d) {
  Measured ranges{0, 0, "NVTX ranges or user annotations"};
  for (const TimeDiffRow& r : d.ranges) ranges.a += r.count_a, ranges.b += r.count_b;
  if (gate.metric == "kernel_time") return {d.kernel_total.count_a, d.kernel_total.count_b, "kernels"};
  if (gate.metric == "nvtx_time") return ranges;
  return {d.kernel_total.count_a + d.copy_total.count_a + ranges.a, d.kernel_total.count_b + d.copy_total.count_b + ranges.b,
          "kernels, copies or NVTX ranges"};
}

void refuse_gates_on_nothing_measured(const DiffOptions& o, const std::vector<DiffGate>& gates, const TraceDiff& diff) {
  for (const DiffGate& gate : gates) {
    const Measured m = measured(gate, diff);
    for (const auto& [count, label] : {std::pair{m.a, side_label("A", o.a)}, std::pair{m.b, side_label("B", o.b)}})
      if (count == 0) throw DiffInputError{"cannot gate '" + gate.text + "' on " + label + ": it holds no " + m.what};
  }
}

template <typename Diff>
int report(const DiffOptions& o, const std::vector<DiffGate>& gates, const Diff& diff, nlohmann::json json,
           const std::string& text) {
  std::vector<GateResult> results;
  for (const DiffGate& gate : gates) {
    auto evaluated = evaluate_gate(gate, diff);
    if (auto* error = std::get_if<std::string>(&evaluated)) throw DiffInputError{"--fail-if " + *error};
    results.push_back(std::get<GateResult>(std::move(evaluated)));
  }
  bool failed = false;
  for (const GateResult& r : results) failed |= r.failed;
  if (o.json) {
    json["gates"] = nlohmann::json::array();
    for (const GateResult& r : results) json["gates"].push_back(cudascope::cli::gate_json(r));
    json["exit_code"] = failed ? kDiffGateFailed : 0;
    std::printf("%s\n", cudascope::cli::json_text(json).c_str());
  } else {
    std::fputs(text.c_str(), stdout);
    if (!results.empty()) std::printf("\nGates\n");
    for (const GateResult& r : results) std::printf("  %s\n", r.message.c_str());
  }
  // Failed gates also on stderr, so a CI log shows them whatever stdout is piped to.
  for (const GateResult& r : results)
    if (r.failed) std::fprintf(stderr, "cudascope diff: gate failed: %s\n", r.message.c_str());
  return failed ? kDiffGateFailed : 0;
}

int run_diff(const DiffOptions& o) {
  const std::vector<DiffGate> gates = parse_gates(o.gates);  // before anything is read
  const auto input_a = open_side(o.a), input_b = open_side(o.b);
  const FileKind kind_a = kind_of(*input_a), kind_b = kind_of(*input_b);
  if (kind_a != kind_b)
    throw DiffInputError{o.a + " is " + (kind_a == FileKind::trace ? "a trace" : "an allocator snapshot") + " and " + o.b + " is " +
                         (kind_b == FileKind::trace ? "a trace" : "an allocator snapshot") +
                         ": diff compares two snapshots or two traces"};
  for (const DiffGate& gate : gates)
    if (gate.kind != kind_a)
      throw DiffInputError{"--fail-if '" + gate.text + "': " + gate.metric + " applies to " + to_string(gate.kind) +
                           "s, and " + o.a + " and " + o.b + " are " + to_string(kind_a) + "s"};

  DiffProgress progress(o.quiet);
  DiffSide side_b;
  std::thread load_b([&] { side_b = load_side(kind_b, *input_b, "B", progress); });
  DiffSide side_a = load_side(kind_a, *input_a, "A", progress);
  load_b.join();
  for (const DiffSide* side : {&side_a, &side_b})
    if (!side->error.empty()) throw DiffInputError{side->error};

  const cudascope::cli::DiffFiles files{o.a, o.b};
  if (kind_a == FileKind::snapshot) {
    const SnapshotDiff diff = diff_snapshots(*side_a.snapshot, *side_b.snapshot);
    return report(o, gates, diff, cudascope::cli::snapshot_diff_json(files, diff, o.top),
                  o.json ? std::string() : cudascope::cli::snapshot_diff_text(files, diff, o.top));
  }
  if (!gates.empty()) refuse_gates_on_partial_traces(o, side_a, side_b);
  const TraceDiff diff = diff_traces(*side_a.stats, *side_b.stats);
  if (!gates.empty()) refuse_gates_on_nothing_measured(o, gates, diff);
  return report(o, gates, diff, cudascope::cli::trace_diff_json(files, diff, o.top),
                o.json ? std::string() : cudascope::cli::trace_diff_text(files, diff, o.top));
}

constexpr const char* kDiffFooter = R"(Files are told apart by content: allocator snapshots (PyTorch pickles, cudascope JSON)
or traces (cudascope run's, torch.profiler's/Kineto, Chrome trace-event files), plain
or gzip. Both must be of one kind.

Snapshots: peak reserved and peak allocated over the recorded trace, final reserved and
allocated, external fragmentation (1 - largest free block / cached bytes, at the end),
and live memory grouped by first user frame and by NVTX range (cudascope's range stack,
or PyTorch's record_function annotations), largest growth first.

Traces: kernel time by name, NVTX/user-annotation range time by name, copies and memsets
by kind (bytes and time): A, B, change, change % and noise. Noise is the standard error
of B - A: sqrt(nA*sA^2 + nB*sB^2), s the sample standard deviation of one name's
per-instance durations (a side with one instance borrows the other's s; one instance on
each side: no estimate, '?'). '~' marks a change within 2 noise.

Gates (--fail-if, repeatable; parsed before any file is read):
  EXPR   := METRIC[NAME] OP CHANGE     OP: > >= < <=     CHANGE: [+|-]NUMBER[UNIT]
  UNIT   := %  (relative to A)  |  B KiB MiB GiB TiB  |  ns us ms s  |  none (bytes, ns)
  A gate fails when B - A (or its percent of A, with %) OP CHANGE.
  snapshots: peak_reserved peak_allocated reserved allocated fragmentation
             frame_bytes[FRAME] nvtx_bytes[RANGE]   (fragmentation in points: % pp)
  traces:    kernel_time kernel_time[KERNEL] nvtx_time[RANGE] copy_bytes copy_time
             copy_bytes[KIND] copy_time[KIND]       (KIND: HtoD DtoH DtoD ... Memset)
  e.g. 'peak_reserved>+5%'  'peak_allocated>+100MiB'  'fragmentation>+2%'
       'kernel_time>+3%'  'kernel_time[ampere_sgemm_128x64_tn]>+3%'
       'nvtx_time[forward]>+10%'  'copy_bytes>+0'
  A NAME must be in one of the files, matched exactly as the tables print it.
  Gates need whole traces: one cut short or whose recording did not finish, or one with
  none of what a gate measures (no kernels for kernel_time, ...) is an input error (exit 2)
  when gates are given; without gates it is shown. (A snapshot holding nothing is a real
  measurement: gated as any other.)

Exit codes: 0 no gate failed, 1 a gate failed (each printed with its values, also on
stderr), 2 a usage or input error (bad expression, unreadable file, files of two kinds,
a metric that does not apply to them, a file gates cannot be read on).)";

}  // namespace

CUDASCOPE_COMMAND(diff, 63) {
  static DiffOptions options;
  CLI::App* sub = app.add_subcommand("diff", "What changed between two allocator snapshots or two traces; gates for CI");
  sub->add_option("A", options.a, "The baseline: an allocator snapshot or a trace")->required();
  sub->add_option("B", options.b, "The file to compare with A, of the same kind")->required();
  sub->add_option("--fail-if", options.gates, "A gate, e.g. 'peak_reserved>+5%' or 'kernel_time>+3%' (repeatable; grammar below)");
  sub->add_flag("--json", options.json, "One JSON object (tables, gates, exit_code) instead of text");
  sub->add_option("--top", options.top, "Rows per table (0: all)")
      ->default_val(20)
      ->check(cudascope::cli::CountUpTo(std::numeric_limits<std::uint32_t>::max()));
  sub->add_flag("-q,--quiet", options.quiet, "No progress lines on stderr");
  sub->footer(kDiffFooter);
  sub->callback([] {
    try {
      cudascope::cli::set_exit_code(run_diff(options));
    } catch (const DiffInputError& e) {
      std::fprintf(stderr, "cudascope diff: error: %s\n", e.message.c_str());
      cudascope::cli::set_exit_code(kDiffInputError);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cudascope diff: error: %s\n", e.what());
      cudascope::cli::set_exit_code(kDiffInputError);
    }
  });
}
