#include <cudascope/analysis/trace_diff.h>

#include <algorithm>
#include <map>

namespace cudascope::analysis {
namespace {

// Sample variance of one instance's duration, or NaN with fewer than two instances.
double instance_variance(std::int64_t count, std::int64_t total_ns, double sum_squares) {
  if (count < 2) return std::numeric_limits<double>::quiet_NaN();
  const double n = static_cast<double>(count), total = static_cast<double>(total_ns);
  return std::max(0.0, (sum_squares - total * total / n) / (n - 1.0));
}

// Variance of B - A for one name (see the header), NaN when neither side can estimate it.
double delta_variance(std::int64_t n_a, double var_a, std::int64_t n_b, double var_b) {
  if (std::isnan(var_a)) var_a = var_b;
  if (std::isnan(var_b)) var_b = var_a;
  if (std::isnan(var_a)) return var_a;
  return static_cast<double>(n_a) * var_a + static_cast<double>(n_b) * var_b;
}

struct Side {
  std::int64_t count = 0, total_ns = 0, bytes = 0;
  double sum_squares = 0;
};

template <typename Row>
Row make_row(const std::string& name, const Side& a, const Side& b) {
  Row row;
  row.name = name;
  row.count_a = a.count, row.count_b = b.count;
  row.total_a_ns = a.total_ns, row.total_b_ns = b.total_ns;
  const double variance = delta_variance(a.count, instance_variance(a.count, a.total_ns, a.sum_squares), b.count,
                                         instance_variance(b.count, b.total_ns, b.sum_squares));
  row.noise_ns = std::sqrt(variance);
  return row;
}

std::vector<TimeDiffRow> diff_durations(const std::vector<DurationStat>& a, const std::vector<DurationStat>& b) {
  std::map<std::string, std::pair<Side, Side>> by_name;
  for (const DurationStat& s : a) by_name[s.name].first = Side{s.count, s.total_ns, 0, s.sum_squares_ns2};
  for (const DurationStat& s : b) by_name[s.name].second = Side{s.count, s.total_ns, 0, s.sum_squares_ns2};
  std::vector<TimeDiffRow> rows;
  rows.reserve(by_name.size());
  for (const auto& [name, sides] : by_name) rows.push_back(make_row<TimeDiffRow>(name, sides.first, sides.second));
  std::stable_sort(rows.begin(), rows.end(), [](const TimeDiffRow& x, const TimeDiffRow& y) {
    return std::llabs(x.delta_ns()) > std::llabs(y.delta_ns());
  });
  return rows;
}

// A total over rows: sums, and the variances of the rows added (rows without an estimate
// add none; a total of rows none of which has one has none).
template <typename Row>
void add_to_total(Row& total, const Row& row, double& variance, bool& any) {
  total.count_a += row.count_a, total.count_b += row.count_b;
  total.total_a_ns += row.total_a_ns, total.total_b_ns += row.total_b_ns;
  if (row.has_noise()) variance += row.noise_ns * row.noise_ns, any = true;
}

}  // namespace

double percent_change(double a, double b) noexcept {
  if (a == 0) return b == 0 ? 0.0 : (b > 0 ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity());
  return 100.0 * (b - a) / a;
}

double TimeDiffRow::delta_percent() const noexcept {
  return percent_change(static_cast<double>(total_a_ns), static_cast<double>(total_b_ns));
}

TraceDiff diff_traces(const TraceStats& a, const TraceStats& b) {
  TraceDiff d;
  d.format_a = a.format, d.format_b = b.format;
  for (const auto& n : a.notes) d.notes.push_back("A: " + n);
  for (const auto& n : b.notes) d.notes.push_back("B: " + n);
  d.kernels = diff_durations(a.kernels, b.kernels);
  d.ranges = diff_durations(a.ranges, b.ranges);

  std::map<std::string, std::pair<Side, Side>> kinds;
  for (const CopyStat& c : a.copies) kinds[c.kind].first = Side{c.count, c.total_ns, c.bytes, c.sum_squares_ns2};
  for (const CopyStat& c : b.copies) kinds[c.kind].second = Side{c.count, c.total_ns, c.bytes, c.sum_squares_ns2};
  for (const auto& [kind, sides] : kinds) {
    CopyDiffRow row = make_row<CopyDiffRow>(kind, sides.first, sides.second);
    row.bytes_a = sides.first.bytes, row.bytes_b = sides.second.bytes;
    d.copies.push_back(std::move(row));
  }

  double variance = 0;
  bool any = false;
  d.kernel_total.name = "all kernels";
  for (const auto& row : d.kernels) add_to_total(d.kernel_total, row, variance, any);
  if (any) d.kernel_total.noise_ns = std::sqrt(variance);
  variance = 0, any = false;
  d.copy_total.name = "all copies";
  for (const auto& row : d.copies) {
    add_to_total(d.copy_total, row, variance, any);
    d.copy_total.bytes_a += row.bytes_a, d.copy_total.bytes_b += row.bytes_b;
  }
  if (any) d.copy_total.noise_ns = std::sqrt(variance);
  return d;
}

}  // namespace cudascope::analysis
