#include "diff_report.h"

#include <cudascope/util/byte_format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cudascope::cli {
namespace {

using namespace cudascope::analysis;

std::string diff_bytes(uint64_t bytes) { return util::format_bytes(bytes); }

std::string diff_signed_bytes(int64_t delta) {
  return (delta < 0 ? "-" : "+") + util::format_bytes(static_cast<uint64_t>(std::llabs(delta)));
}

std::string diff_percent(double p) {
  if (std::isinf(p)) return p > 0 ? "new" : "gone";
  char text[32];
  std::snprintf(text, sizeof text, "%+.2f%%", p);
  return text;
}

// Trace tables are in microseconds with one decimal: a short kernel's noise still shows.
std::string diff_us(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", ns / 1e3);
  return text;
}

std::string diff_signed_us(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f", ns / 1e3);
  return text;
}

// A JSON number, or null for what JSON cannot hold (NaN: no estimate; inf: from zero).
nlohmann::json diff_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

size_t shown(size_t rows, size_t top) { return top == 0 ? rows : std::min(rows, top); }

std::string heading(const std::string& title, size_t rows, size_t top, const char* noun, const char* order) {
  char text[512];
  if (shown(rows, top) < rows)
    std::snprintf(text, sizeof text, "\n%s (top %zu of %zu %s, %s)\n", title.c_str(), shown(rows, top), rows, noun, order);
  else
    std::snprintf(text, sizeof text, "\n%s (%zu %s, %s)\n", title.c_str(), rows, noun, order);
  return text;
}

void figure_line(std::string& out, const char* label, uint64_t a, uint64_t b) {
  char text[256];
  std::snprintf(text, sizeof text, "  %-16s %14s %14s %14s %10s\n", label, diff_bytes(a).c_str(), diff_bytes(b).c_str(),
                diff_signed_bytes(int64_t(b) - int64_t(a)).c_str(), diff_percent(percent_change(double(a), double(b))).c_str());
  out += text;
}

void growth_table(std::string& out, const std::string& title, const Comparison& c, size_t top) {
  out += heading(title, c.rows.size(), top, "groups", "largest growth first");
  char text[256];
  std::snprintf(text, sizeof text, "  %12s %12s %12s %8s %8s  %s\n", "growth", "A", "B", "blocks A", "blocks B", "group");
  out += text;
  for (size_t i = 0; i < shown(c.rows.size(), top); ++i) {
    const CompareRow& r = c.rows[i];
    std::snprintf(text, sizeof text, "  %12s %12s %12s %8llu %8llu  ", diff_signed_bytes(r.delta()).c_str(),
                  diff_bytes(r.bytes_a).c_str(), diff_bytes(r.bytes_b).c_str(), (unsigned long long)r.count_a,
                  (unsigned long long)r.count_b);
    out += text + r.frame + "\n";
  }
}

// "~": within noise; "?": no estimate (a single instance on each side); blank: a change
// beyond the noise.
const char* noise_flag(const TimeDiffRow& r) { return !r.has_noise() ? "?" : r.within_noise() ? "~" : " "; }

void time_line(std::string& out, const TimeDiffRow& r) {
  char text[256];
  std::snprintf(text, sizeof text, "  %12s %12s %12s %9s %10s %s %7lld %7lld  ", diff_us(double(r.total_a_ns)).c_str(),
                diff_us(double(r.total_b_ns)).c_str(), diff_signed_us(double(r.delta_ns())).c_str(),
                diff_percent(r.delta_percent()).c_str(), r.has_noise() ? diff_us(r.noise_ns).c_str() : "-", noise_flag(r),
                (long long)r.count_a, (long long)r.count_b);
  out += text + r.name + "\n";
}

void time_table(std::string& out, const std::string& title, const std::vector<TimeDiffRow>& rows, const TimeDiffRow* total,
                size_t top) {
  out += heading(title, rows.size(), top, "names", "largest change first");
  char text[256];
  std::snprintf(text, sizeof text, "  %12s %12s %12s %9s %10s %s %7s %7s  %s\n", "A us", "B us", "change us", "change", "noise us",
                " ", "n A", "n B", "name");
  out += text;
  if (total) time_line(out, *total);
  for (size_t i = 0; i < shown(rows.size(), top); ++i) time_line(out, rows[i]);
}

nlohmann::json time_row_json(const TimeDiffRow& r) {
  return {{"name", r.name},
          {"count_a", r.count_a},
          {"count_b", r.count_b},
          {"a_ns", r.total_a_ns},
          {"b_ns", r.total_b_ns},
          {"change_ns", r.delta_ns()},
          {"change_percent", diff_number(r.delta_percent())},
          {"noise_ns", diff_number(r.noise_ns)},
          {"within_noise", r.within_noise()}};
}

nlohmann::json copy_row_json(const CopyDiffRow& r) {
  nlohmann::json j = time_row_json(r);
  j["bytes_a"] = r.bytes_a;
  j["bytes_b"] = r.bytes_b;
  j["change_bytes"] = r.delta_bytes();
  j["change_bytes_percent"] = diff_number(percent_change(double(r.bytes_a), double(r.bytes_b)));
  return j;
}

nlohmann::json figure_json(double a, double b) {
  return {{"a", a}, {"b", b}, {"change", b - a}, {"change_percent", diff_number(percent_change(a, b))}};
}

nlohmann::json growth_json(const Comparison& c, size_t top) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t i = 0; i < shown(c.rows.size(), top); ++i) {
    const CompareRow& r = c.rows[i];
    rows.push_back({{"group", r.frame},
                    {"bytes_a", r.bytes_a},
                    {"bytes_b", r.bytes_b},
                    {"growth", r.delta()},
                    {"blocks_a", r.count_a},
                    {"blocks_b", r.count_b}});
  }
  return {{"total_a", c.total_a}, {"total_b", c.total_b}, {"groups", c.rows.size()}, {"rows", rows}};
}

}  // namespace

std::string snapshot_diff_text(const DiffFiles& files, const SnapshotDiff& d, size_t top) {
  std::string out = "A: " + files.a + " (allocator snapshot)\nB: " + files.b + " (allocator snapshot)\n\n";
  char text[256];
  std::snprintf(text, sizeof text, "  %-16s %14s %14s %14s %10s\n", "", "A", "B", "change", "change");
  out += text;
  figure_line(out, "peak reserved", d.a.peak_reserved_bytes, d.b.peak_reserved_bytes);
  figure_line(out, "peak allocated", d.a.peak_allocated_bytes, d.b.peak_allocated_bytes);
  figure_line(out, "reserved", d.a.reserved_bytes, d.b.reserved_bytes);
  figure_line(out, "allocated", d.a.allocated_bytes, d.b.allocated_bytes);
  std::snprintf(text, sizeof text, "  %-16s %13.2f%% %13.2f%% %+8.2f points\n", "fragmentation", fragmentation_percent(d.a),
                fragmentation_percent(d.b), fragmentation_percent(d.b) - fragmentation_percent(d.a));
  out += text;
  growth_table(out, "Live memory by first user frame", d.by_user_frame, top);
  growth_table(out, "Live memory by NVTX range", d.by_nvtx_range, top);
  return out;
}

std::string trace_diff_text(const DiffFiles& files, const TraceDiff& d, size_t top) {
  std::string out = "A: " + files.a + " (" + d.format_a + " trace)\nB: " + files.b + " (" + d.format_b + " trace)\n";
  out += "noise: standard error of B - A from the spread of each name's instances; ~ within 2 noise, ? no estimate\n";
  for (const std::string& note : d.notes) out += "note: " + note + "\n";
  time_table(out, "Kernel time by name", d.kernels, &d.kernel_total, top);
  time_table(out, "NVTX range time by name", d.ranges, nullptr, top);
  out += heading("Copies and memsets by kind", d.copies.size(), 0, "kinds", "by kind");
  char text[256];
  std::snprintf(text, sizeof text, "  %12s %12s %10s %12s %12s %12s %9s %10s %s %7s %7s  %s\n", "A bytes", "B bytes", "change",
                "A us", "B us", "change us", "change", "noise us", " ", "n A", "n B", "kind");
  out += text;
  auto copy_line = [&](const CopyDiffRow& r) {
    std::snprintf(text, sizeof text, "  %12s %12s %10s %12s %12s %12s %9s %10s %s %7lld %7lld  ", diff_bytes(uint64_t(r.bytes_a)).c_str(),
                  diff_bytes(uint64_t(r.bytes_b)).c_str(), diff_percent(percent_change(double(r.bytes_a), double(r.bytes_b))).c_str(),
                  diff_us(double(r.total_a_ns)).c_str(), diff_us(double(r.total_b_ns)).c_str(),
                  diff_signed_us(double(r.delta_ns())).c_str(), diff_percent(r.delta_percent()).c_str(),
                  r.has_noise() ? diff_us(r.noise_ns).c_str() : "-", noise_flag(r), (long long)r.count_a, (long long)r.count_b);
    out += text + r.name + "\n";
  };
  copy_line(d.copy_total);
  for (const CopyDiffRow& r : d.copies) copy_line(r);
  return out;
}

nlohmann::json snapshot_diff_json(const DiffFiles& files, const SnapshotDiff& d, size_t top) {
  return {{"kind", "snapshot"},
          {"a", files.a},
          {"b", files.b},
          {"figures",
           {{"peak_reserved_bytes", figure_json(double(d.a.peak_reserved_bytes), double(d.b.peak_reserved_bytes))},
            {"peak_allocated_bytes", figure_json(double(d.a.peak_allocated_bytes), double(d.b.peak_allocated_bytes))},
            {"reserved_bytes", figure_json(double(d.a.reserved_bytes), double(d.b.reserved_bytes))},
            {"allocated_bytes", figure_json(double(d.a.allocated_bytes), double(d.b.allocated_bytes))},
            {"fragmentation_percent", figure_json(fragmentation_percent(d.a), fragmentation_percent(d.b))}}},
          {"by_user_frame", growth_json(d.by_user_frame, top)},
          {"by_nvtx_range", growth_json(d.by_nvtx_range, top)}};
}

nlohmann::json trace_diff_json(const DiffFiles& files, const TraceDiff& d, size_t top) {
  auto rows = [top](const std::vector<TimeDiffRow>& v) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < shown(v.size(), top); ++i) out.push_back(time_row_json(v[i]));
    return out;
  };
  nlohmann::json copies = nlohmann::json::array();
  for (const CopyDiffRow& r : d.copies) copies.push_back(copy_row_json(r));
  return {{"kind", "trace"},
          {"a", files.a},
          {"b", files.b},
          {"format_a", d.format_a},
          {"format_b", d.format_b},
          {"notes", d.notes},
          {"noise_sigmas", kNoiseSigmas},
          {"kernels", {{"total", time_row_json(d.kernel_total)}, {"names", d.kernels.size()}, {"rows", rows(d.kernels)}}},
          {"nvtx_ranges", {{"names", d.ranges.size()}, {"rows", rows(d.ranges)}}},
          {"copies", {{"total", copy_row_json(d.copy_total)}, {"rows", copies}}}};
}

nlohmann::json gate_json(const GateResult& r) {
  return {{"expression", r.gate.text}, {"a", r.a},           {"b", r.b},
          {"change", diff_number(r.change)}, {"relative", r.gate.relative}, {"noise", diff_number(r.noise)},
          {"failed", r.failed},         {"message", r.message}};
}

}  // namespace cudascope::cli
