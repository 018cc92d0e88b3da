#include <cudascope/gui/event_details_model.h>

#include <cudascope/analysis/rank_summary.h>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>

namespace cudascope::gui {
namespace {

QString json_text(const QJsonValue& v) {
  if (v.isArray()) {
    QStringList parts;
    for (const auto& x : v.toArray()) parts << json_text(x);
    return "[" + parts.join(", ") + "]";
  }
  if (v.isObject()) return QString::fromUtf8(QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact));
  if (v.isDouble()) {
    const double d = v.toDouble();
    return d == std::floor(d) && std::fabs(d) < 9e15 ? QString::number(qint64(d)) : QString::number(d, 'g', 10);
  }
  if (v.isBool()) return v.toBool() ? "true" : "false";
  if (v.isNull()) return "null";
  return v.toString();
}

QString view(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

// For a communication kernel of a rank timeline: the rule that pairs its collective with the
// other ranks' (the same for every rank), and its key where the kernel names it.
QString pairing_of(const TraceDocument& doc, const analysis::TraceModel::Event& e, const QJsonObject& args) {
  const auto& ranks = doc.rankGroups();
  if (ranks.empty() || !analysis::is_communication_kernel_event(doc.model(), e)) return {};
  const analysis::CollectivePairing rule = ranks.front().pairing;
  QString text = QString::fromLatin1(analysis::to_string(rule));
  const QString group = json_text(args.value("Process Group Name"));
  if (rule == analysis::CollectivePairing::communicator_and_sequence && args.contains("Seq"))
    text += QStringLiteral(" (group %1, Seq %2)").arg(group, json_text(args.value("Seq")));
  else if (rule == analysis::CollectivePairing::communicator_and_order && !group.isEmpty())
    text += QStringLiteral(" (group %1)").arg(group);
  return text;
}

}  // namespace

QString formatDuration(qint64 ns) {
  // Four significant digits in the largest unit that keeps the number at least 1.
  const double v = double(ns);
  if (std::llabs(ns) < 1000) return QString::number(ns) + " ns";
  auto digits = [](double x) {
    const double a = std::fabs(x);
    return a < 10 ? 3 : a < 100 ? 2 : 1;
  };
  if (std::llabs(ns) < 1000000) return QString::number(v / 1e3, 'f', std::min(2, digits(v / 1e3))) + " us";
  if (std::llabs(ns) < 1000000000) return QString::number(v / 1e6, 'f', digits(v / 1e6)) + " ms";
  return QString::number(v / 1e9, 'f', digits(v / 1e9)) + " s";
}

void EventDetailsModel::setEvent(TraceDocument* doc, quint32 event) {
  beginResetModel();
  rows_.clear();
  event_ = doc && event < doc->model().event_count() ? event : kNone;
  if (event_ != kNone) {
    const auto& m = doc->model();
    const auto& e = m.event(event_);
    const auto& track = m.tracks()[e.track];
    rows_.push_back({"Name", view(m.name(e))});
    rows_.push_back({"Category", view(m.cat(e))});
    rows_.push_back({"Row", QString::fromStdString(m.process_label(track.process) + " / " + m.track_label(e.track))});
    rows_.push_back({"Start", formatDuration(e.ts_ns - doc->index().begin_ns()) + " after the trace start"});
    if (e.dur_ns >= 0) rows_.push_back({"Duration", formatDuration(e.dur_ns)});
    else if (e.is_slice()) rows_.push_back({"Duration", "never closed"});
    rows_.push_back({"Depth", QString::number(e.depth)});
    const QJsonObject args = QJsonDocument::fromJson(QByteArray::fromStdString(std::string(m.args_json(e)))).object();
    if (const QString pairing = pairing_of(*doc, e, args); !pairing.isEmpty()) rows_.push_back({"Paired across ranks by", pairing});
    // What a CUDA user looks for first, under the names people use.
    const std::pair<const char*, const char*> first[] = {{"correlation", "Correlation"}, {"grid", "Grid"}, {"block", "Block"},
                                                         {"bytes", "Bytes"}, {"stream", "Stream"}, {"device", "Device"}};
    for (const auto& [key, label] : first)
      if (args.contains(key)) rows_.push_back({label, json_text(args.value(key))});
    for (auto it = args.begin(); it != args.end(); ++it) {
      bool shown = false;
      for (const auto& [key, label] : first) shown |= it.key() == key;
      if (!shown) rows_.push_back({it.key(), json_text(it.value())});
    }
    for (std::uint32_t f : doc->index().flows_of(m, event_)) {
      const auto& flow = m.flows()[f];
      const bool outgoing = flow.from_slice == event_;
      const quint32 other = outgoing ? flow.to_slice : flow.from_slice;
      const QString what = other == kNone ? QStringLiteral("(unbound)") : view(m.name(m.event(other)));
      rows_.push_back({outgoing ? QStringLiteral("Flow to") : QStringLiteral("Flow from"),
                       what + " [" + view(m.string(flow.cat)) + " " + QString::number(flow.id) + "]", other});
    }
  }
  endResetModel();
}

QString EventDetailsModel::value(const QString& field) const {
  for (const Row& r : rows_)
    if (r.field == field) return r.value;
  return {};
}

int EventDetailsModel::rowCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : int(rows_.size()); }
int EventDetailsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant EventDetailsModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const Row& r = rows_[size_t(index.row())];
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) return index.column() == Field ? r.field : r.value;
  if (role == Qt::UserRole) return r.target == kNone ? QVariant() : QVariant(r.target);
  return {};
}

QVariant EventDetailsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  return section == Field ? QStringLiteral("Field") : QStringLiteral("Value");
}

}  // namespace cudascope::gui
