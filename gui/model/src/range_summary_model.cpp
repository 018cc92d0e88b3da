#include <cudascope/gui/range_summary_model.h>

#include <cudascope/gui/capped_text.h>
#include <cudascope/gui/event_details_model.h>

#include <cudascope/analysis/cpp_names.h>

#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <numeric>

namespace cudascope::gui {
namespace {

// A Name cell's text uncut: kernel names as Nsight shows them, stream labels as they are.
std::string shown_whole(const std::string& name, bool is_stream) { return is_stream ? name : analysis::shorten_cpp_name(name); }

}  // namespace

void RangeSummaryModel::setSummary(analysis::RangeSummary summary) {
  beginResetModel();
  summary_ = std::move(summary);
  shown_.assign(std::size_t(rowCount()), QString());
  name_rank_.clear();
  endResetModel();
}

const std::string& RangeSummaryModel::nameOf(std::size_t row) const {
  if (row < summary_.streams.size()) return summary_.streams[row].label;
  row -= summary_.streams.size();
  return row < summary_.kernels.size() ? summary_.kernels[row].name : summary_.ranges[row - summary_.kernels.size()].name;
}

QString RangeSummaryModel::shownName(std::size_t row) const {
  // Made once per row: shortening reads the whole name, too slow for every repaint of a
  // name of megabytes.
  QString& text = shown_[row];
  if (text.isNull()) text = row < summary_.streams.size() ? capped(nameOf(row), kMaxLabelChars) : cappedShortName(nameOf(row), kMaxLabelChars);
  return text;
}

std::uint32_t RangeSummaryModel::nameRank(std::size_t row) const {
  if (name_rank_.empty()) {
    std::vector<std::uint32_t> order(shown_.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [this](std::uint32_t a, std::uint32_t b) { return nameOf(a) < nameOf(b); });
    name_rank_.resize(order.size());
    for (std::uint32_t k = 0; k < order.size(); ++k) name_rank_[order[k]] = k;
  }
  return name_rank_[row];
}

QVariant RangeSummaryModel::nameData(std::size_t row, int role) const {
  switch (role) {
    case Qt::DisplayRole: return shownName(row);
    case Qt::ToolTipRole: return cappedTooltip(nameOf(row));  // the full signature of a kernel
    case Qt::UserRole: return QString::fromStdString(nameOf(row));
    case SortRole: return nameRank(row);
    case FullTextRole: return QString::fromStdString(shown_whole(nameOf(row), row < summary_.streams.size()));
    default: return {};
  }
}

int RangeSummaryModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid()) return 0;
  return int(summary_.streams.size() + summary_.kernels.size() + summary_.ranges.size());
}

int RangeSummaryModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RangeSummaryModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  if (index.column() == Name) return nameData(std::size_t(index.row()), role);
  if (role == SortRole) role = Qt::UserRole;
  if (role != Qt::DisplayRole && role != Qt::UserRole && role != Qt::ToolTipRole) return {};
  const bool raw = role == Qt::UserRole;
  size_t r = size_t(index.row());
  const int c = index.column();
  if (r < summary_.streams.size()) {
    const auto& s = summary_.streams[r];
    switch (c) {
      case Kind: return QStringLiteral("stream");
      case Count: return raw ? QVariant(qulonglong(s.events)) : QVariant(QString::number(s.events));
      case Total: return raw ? QVariant(qlonglong(s.busy_ns)) : QVariant(formatDuration(s.busy_ns));
      case Busy: {
        if (raw) return s.busy_fraction;
        const double pct = 100.0 * s.busy_fraction;  // small shares keep two significant digits
        return QString::number(pct, 'f', pct >= 10 ? 1 : pct >= 1 ? 2 : pct >= 0.01 ? 3 : 4) + " %";
      }
      default: return {};
    }
  }
  r -= summary_.streams.size();
  const bool is_kernel = r < summary_.kernels.size();
  const auto& n = is_kernel ? summary_.kernels[r] : summary_.ranges[r - summary_.kernels.size()];
  const qint64 mean = n.count ? qint64(n.total_ns / qint64(n.count)) : 0;
  switch (c) {
    case Kind: return is_kernel ? QStringLiteral("kernel") : QStringLiteral("range");
    case Count: return raw ? QVariant(qulonglong(n.count)) : QVariant(QString::number(n.count));
    case Total: return raw ? QVariant(qlonglong(n.total_ns)) : QVariant(formatDuration(n.total_ns));
    case Mean: return raw ? QVariant(mean) : QVariant(formatDuration(mean));
    case Min: return raw ? QVariant(qlonglong(n.min_ns)) : QVariant(formatDuration(n.min_ns));
    case Max: return raw ? QVariant(qlonglong(n.max_ns)) : QVariant(formatDuration(n.max_ns));
    default: return {};
  }
}

QVariant RangeSummaryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  static const char* names[] = {"Kind", "Name", "Count", "Total / busy", "Mean", "Min", "Max", "Busy"};
  return section >= 0 && section < ColumnCount ? QVariant(QString(names[section])) : QVariant();
}

QFuture<analysis::RangeSummary> summarize_range_async(const TraceDocument& doc, qint64 t0, qint64 t1) {
  const analysis::TraceModel* model = &doc.model();
  const analysis::TimelineIndex* index = &doc.index();
  return QtConcurrent::run([model, index, t0, t1] { return analysis::summarize_range(*model, *index, t0, t1); });
}

}  // namespace cudascope::gui
