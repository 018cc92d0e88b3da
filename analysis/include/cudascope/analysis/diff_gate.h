#pragma once
// `cudascope diff --fail-if EXPR`: gates for CI on the difference between two files.
//
//   EXPR      := METRIC [ "[" NAME "]" ] OP CHANGE
//   OP        := ">" | ">=" | "<" | "<="
//   CHANGE    := [ "+" | "-" ] NUMBER [ UNIT ]
//   UNIT      := "%"                                   change relative to A, in percent
//              | B KiB MiB GiB TiB (K M G KB MB GB...) bytes metrics, absolute (binary units)
//              | ns us ms s                            time metrics, absolute
//              | none                                  the metric's base unit (bytes, ns)
//
// The gate fails when (B - A) OP CHANGE, the change taken in the unit written: relative
// ("kernel_time>+3%": B more than 3% above A) or absolute ("peak_allocated>+100MiB",
// "copy_bytes>+0"). Fragmentation is itself a percentage, so its changes are in percentage
// points, "%" or "pp" or bare ("fragmentation>+2%": up by more than 2 points). A relative
// change from A = 0 is +inf when B > 0.
//
// Metrics of snapshots: peak_reserved, peak_allocated, reserved, allocated (final state),
// fragmentation (external, at the end), frame_bytes[FRAME] and nvtx_bytes[RANGE] (live bytes
// of one group of the growth tables, named as printed). Metrics of traces: kernel_time and
// kernel_time[KERNEL], nvtx_time[RANGE], copy_bytes, copy_time and copy_bytes[KIND],
// copy_time[KIND] (KIND: HtoD, DtoH, DtoD, ..., Memset). A NAME is matched exactly and must be
// in at least one of the files.
//
// Parsing needs no file, so a command checks every gate before loading anything.

#include <cudascope/analysis/file_kind.h>
#include <cudascope/analysis/snapshot_diff.h>
#include <cudascope/analysis/trace_diff.h>

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

namespace cudascope::analysis {

enum class GateUnit { bytes, nanoseconds, percent_points };

struct DiffGate {
  std::string text;    // as written
  std::string metric;  // "peak_reserved", "kernel_time", ...
  std::optional<std::string> name;  // inside [...]
  std::string op;      // ">", ">=", "<", "<="
  double threshold = 0;  // percent when relative, else in `unit`'s base (bytes, ns, points)
  bool relative = false;
  FileKind kind = FileKind::snapshot;  // the files the metric applies to
  GateUnit unit = GateUnit::bytes;     // the metric's unit
};

// A gate, or an error naming the expression and what is wrong with it.
std::variant<DiffGate, std::string> parse_diff_gate(std::string_view text);

struct GateResult {
  DiffGate gate;
  double a = 0, b = 0;   // the metric in A and B (bytes, ns or percent)
  double change = 0;     // B - A, or the percent change when the gate is relative
  double noise = std::numeric_limits<double>::quiet_NaN();  // traces: standard error of B - A
  bool failed = false;
  // "kernel_time>+3%: 12.500 ms -> 13.100 ms (+4.80%, noise 0.210 ms): failed"
  std::string message;
};

// The gate against a diff, or an error (the metric does not apply to these files, the NAME is
// in neither file) naming the expression.
std::variant<GateResult, std::string> evaluate_gate(const DiffGate& gate, const SnapshotDiff& diff);
std::variant<GateResult, std::string> evaluate_gate(const DiffGate& gate, const TraceDiff& diff);

}  // namespace cudascope::analysis
