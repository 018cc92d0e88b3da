#include <cudascope/analysis/diff_gate.h>

#include <cudascope/util/byte_format.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace cudascope::analysis {
namespace {

enum class NameRule { none, optional, required };

struct MetricSpec {
  std::string_view name;
  FileKind kind;
  GateUnit unit;
  NameRule rule;
};

constexpr MetricSpec kMetrics[] = {
    {"peak_reserved", FileKind::snapshot, GateUnit::bytes, NameRule::none},
    {"peak_allocated", FileKind::snapshot, GateUnit::bytes, NameRule::none},
    {"reserved", FileKind::snapshot, GateUnit::bytes, NameRule::none},
    {"allocated", FileKind::snapshot, GateUnit::bytes, NameRule::none},
    {"fragmentation", FileKind::snapshot, GateUnit::percent_points, NameRule::none},
    {"frame_bytes", FileKind::snapshot, GateUnit::bytes, NameRule::required},
    {"nvtx_bytes", FileKind::snapshot, GateUnit::bytes, NameRule::required},
    {"kernel_time", FileKind::trace, GateUnit::nanoseconds, NameRule::optional},
    {"nvtx_time", FileKind::trace, GateUnit::nanoseconds, NameRule::required},
    {"copy_bytes", FileKind::trace, GateUnit::bytes, NameRule::optional},
    {"copy_time", FileKind::trace, GateUnit::nanoseconds, NameRule::optional},
};

std::string metric_list() {
  std::string list;
  for (const MetricSpec& m : kMetrics) list += (list.empty() ? "" : ", ") + std::string(m.name);
  return list;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// The magnitude of an absolute change in the metric's base unit, or nullopt.
std::optional<double> absolute_magnitude(GateUnit unit, std::string_view number, double value, std::string_view suffix) {
  switch (unit) {
    case GateUnit::bytes: {
      if (suffix.empty()) return value;
      uint64_t bytes = 0;
      if (!util::parse_byte_size(std::string(number) + std::string(suffix), bytes)) return std::nullopt;
      return static_cast<double>(bytes);
    }
    case GateUnit::nanoseconds:
      if (suffix.empty() || suffix == "ns") return value;
      if (suffix == "us") return value * 1e3;
      if (suffix == "ms") return value * 1e6;
      if (suffix == "s") return value * 1e9;
      return std::nullopt;
    case GateUnit::percent_points:
      if (suffix.empty() || suffix == "%" || suffix == "pp") return value;
      return std::nullopt;
  }
  return std::nullopt;
}

const char* unit_help(GateUnit unit) {
  switch (unit) {
    case GateUnit::bytes: return "% or a byte unit (B, KiB, MiB, GiB, TiB)";
    case GateUnit::nanoseconds: return "% or a time unit (ns, us, ms, s)";
    case GateUnit::percent_points: return "percentage points (%, pp or none)";
  }
  return "";
}

std::string format_value(GateUnit unit, double v) {
  char text[64];
  if (std::isinf(v)) return v > 0 ? "+inf" : "-inf";
  switch (unit) {
    case GateUnit::bytes: {
      const std::string sign = v < 0 ? "-" : "";
      return sign + util::format_bytes(static_cast<uint64_t>(std::llround(std::fabs(v))));
    }
    case GateUnit::nanoseconds: std::snprintf(text, sizeof text, "%.3f ms", v / 1e6); return text;
    case GateUnit::percent_points: std::snprintf(text, sizeof text, "%.2f%%", v); return text;
  }
  return {};
}

std::string format_change(const GateResult& r) {
  char text[64];
  if (r.gate.relative) {
    if (std::isinf(r.change)) return r.change > 0 ? "+inf%" : "-inf%";
    std::snprintf(text, sizeof text, "%+.2f%%", r.change);
    return text;
  }
  if (r.gate.unit == GateUnit::percent_points) {
    std::snprintf(text, sizeof text, "%+.2f points", r.change);
    return text;
  }
  return (r.change >= 0 ? "+" : "") + format_value(r.gate.unit, r.change);
}

bool compare(double change, const std::string& op, double threshold) {
  if (op == ">") return change > threshold;
  if (op == ">=") return change >= threshold;
  if (op == "<") return change < threshold;
  return change <= threshold;
}

GateResult finish(const DiffGate& gate, double a, double b, double noise) {
  GateResult r;
  r.gate = gate;
  r.a = a, r.b = b, r.noise = noise;
  r.change = gate.relative ? percent_change(a, b) : b - a;
  r.failed = compare(r.change, gate.op, gate.threshold);
  r.message = gate.text + ": " + format_value(gate.unit, a) + " -> " + format_value(gate.unit, b) + " (" + format_change(r);
  if (!std::isnan(noise)) {
    r.message += ", noise " + format_value(gate.unit, noise);
    if (std::fabs(b - a) <= kNoiseSigmas * noise) r.message += ", within noise";
  }
  r.message += r.failed ? "): failed" : "): passed";
  return r;
}

std::string wrong_kind(const DiffGate& gate, FileKind files) {
  return "'" + gate.text + "': " + gate.metric + " applies to " + to_string(gate.kind) + "s, and these files are " +
         to_string(files) + "s";
}

template <typename Row>
const Row* find_row(const std::vector<Row>& rows, const std::string& name) {
  for (const Row& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace

std::variant<DiffGate, std::string> parse_diff_gate(std::string_view text) {
  DiffGate gate;
  gate.text = std::string(trim(text));
  const std::string quoted = "'" + gate.text + "'";
  std::string_view rest = gate.text;
  size_t n = 0;
  while (n < rest.size() && (std::islower(static_cast<unsigned char>(rest[n])) || rest[n] == '_')) ++n;
  gate.metric = std::string(rest.substr(0, n));
  const MetricSpec* spec = nullptr;
  for (const MetricSpec& m : kMetrics)
    if (m.name == gate.metric) spec = &m;
  if (!spec)
    return quoted + ": " + (gate.metric.empty() ? "expected a metric first" : "unknown metric '" + gate.metric + "'") +
           " (metrics: " + metric_list() + ")";
  gate.kind = spec->kind;
  gate.unit = spec->unit;
  rest.remove_prefix(n);
  if (!rest.empty() && rest.front() == '[') {
    // The name runs to the last ']' (kernel names hold brackets of their own; a change never does).
    const size_t close = rest.rfind(']');
    if (close == std::string_view::npos) return quoted + ": '[' without its closing ']'";
    gate.name = std::string(rest.substr(1, close - 1));
    if (gate.name->empty()) return quoted + ": an empty name in []";
    rest.remove_prefix(close + 1);
  }
  if (spec->rule == NameRule::none && gate.name)
    return quoted + ": " + gate.metric + " takes no [NAME]";
  if (spec->rule == NameRule::required && !gate.name)
    return quoted + ": " + gate.metric + " needs a name, " + gate.metric + "[NAME]";
  rest = trim(rest);
  for (std::string_view op : {">=", "<=", ">", "<"})
    if (rest.substr(0, op.size()) == op) {
      gate.op = std::string(op);
      break;
    }
  if (gate.op.empty()) return quoted + ": expected an operator (>, >=, <, <=) after " + gate.metric;
  rest = trim(rest.substr(gate.op.size()));
  double sign = 1;
  if (!rest.empty() && (rest.front() == '+' || rest.front() == '-')) {
    sign = rest.front() == '-' ? -1 : 1;
    rest.remove_prefix(1);
  }
  size_t digits = 0;
  while (digits < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[digits])) || rest[digits] == '.')) ++digits;
  const std::string_view number = rest.substr(0, digits);
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || end != number.data() + number.size())
    return quoted + ": expected a change after '" + gate.op + "', a number such as +5%, +100MiB or +2ms";
  const std::string_view suffix = trim(rest.substr(digits));
  if (suffix == "%" && spec->unit != GateUnit::percent_points) {
    gate.relative = true;
    gate.threshold = sign * value;
    return gate;
  }
  const auto magnitude = absolute_magnitude(spec->unit, number, value, suffix);
  if (!magnitude) return quoted + ": unit '" + std::string(suffix) + "' does not fit " + gate.metric + " (use " + unit_help(spec->unit) + ")";
  gate.threshold = sign * *magnitude;
  return gate;
}

std::variant<GateResult, std::string> evaluate_gate(const DiffGate& gate, const SnapshotDiff& d) {
  if (gate.kind != FileKind::snapshot) return wrong_kind(gate, FileKind::snapshot);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto bytes = [&](uint64_t a, uint64_t b) { return finish(gate, double(a), double(b), nan); };
  if (gate.metric == "peak_reserved") return bytes(d.a.peak_reserved_bytes, d.b.peak_reserved_bytes);
  if (gate.metric == "peak_allocated") return bytes(d.a.peak_allocated_bytes, d.b.peak_allocated_bytes);
  if (gate.metric == "reserved") return bytes(d.a.reserved_bytes, d.b.reserved_bytes);
  if (gate.metric == "allocated") return bytes(d.a.allocated_bytes, d.b.allocated_bytes);
  if (gate.metric == "fragmentation") return finish(gate, fragmentation_percent(d.a), fragmentation_percent(d.b), nan);
  const Comparison& table = gate.metric == "frame_bytes" ? d.by_user_frame : d.by_nvtx_range;
  for (const CompareRow& row : table.rows)
    if (row.frame == *gate.name) return bytes(row.bytes_a, row.bytes_b);
  return "'" + gate.text + "': '" + *gate.name + "' is not a " +
         (gate.metric == "frame_bytes" ? "first user frame" : "NVTX range") + " of live memory in either snapshot";
}

std::variant<GateResult, std::string> evaluate_gate(const DiffGate& gate, const TraceDiff& d) {
  if (gate.kind != FileKind::trace) return wrong_kind(gate, FileKind::trace);
  const TimeDiffRow* row = nullptr;
  const CopyDiffRow* copy = nullptr;
  std::string where;
  if (gate.metric == "kernel_time") {
    row = gate.name ? find_row(d.kernels, *gate.name) : &d.kernel_total;
    where = "kernel";
  } else if (gate.metric == "nvtx_time") {
    row = find_row(d.ranges, *gate.name);
    where = "NVTX range";
  } else {
    copy = gate.name ? find_row(d.copies, *gate.name) : &d.copy_total;
    row = copy;
    where = "copy kind";
  }
  if (!row) return "'" + gate.text + "': '" + *gate.name + "' is not a " + where + " name in either trace";
  if (gate.metric == "copy_bytes") return finish(gate, double(copy->bytes_a), double(copy->bytes_b), std::numeric_limits<double>::quiet_NaN());
  return finish(gate, double(row->total_a_ns), double(row->total_b_ns), row->noise_ns);
}

}  // namespace cudascope::analysis
