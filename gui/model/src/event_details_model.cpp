#include <cudascope/gui/event_details_model.h>

#include <cudascope/analysis/rank_summary.h>
#include <cudascope/gui/capped_text.h>

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

// The ranks (as numbered in their traces) that share a collective's communicator: "2, 3"; a long
// list ends with how many there are.
QString shared_by(const analysis::CollectiveKey& key, const std::vector<RankGroup>& groups) {
  constexpr std::size_t kListed = 8;
  QStringList ranks;
  for (std::size_t i = 0; i < key.ranks.size() && i < kListed; ++i) ranks << QString::number(groups[key.ranks[i]].rank);
  if (key.ranks.size() > kListed) ranks << QStringLiteral("... (%1 ranks)").arg(key.ranks.size());
  return ranks.join(QStringLiteral(", "));
}

// Where a collective sits, as the rule pairs it: "communicator 0x5c1f..., collective 17 of 40 on it;
// ranks 0, 2" (numbered from 1 here; the analysis's key counts from 0).
QString key_text(const analysis::CollectiveKey& key, analysis::CollectivePairing rule, const std::vector<RankGroup>& groups) {
  using Rule = analysis::CollectivePairing;
  const QString name = QString::fromStdString(key.communicator);
  const QString place = QStringLiteral("collective %1 of %2").arg(key.position + 1).arg(key.count);
  switch (rule) {
    case Rule::communicator_and_sequence:
      return QStringLiteral("group %1, Seq %2; ranks %3").arg(name, QString::number(key.key), shared_by(key, groups));
    case Rule::communicator_and_order: return QStringLiteral("group %1, %2 on it; ranks %3").arg(name, place, shared_by(key, groups));
    case Rule::nccl_communicator_and_order:
      return QStringLiteral("communicator %1, %2 on it; ranks %3").arg(name, place, shared_by(key, groups));
    case Rule::order: return place + QStringLiteral(" of its rank");
  }
  return {};
}

// For a communication kernel of a rank timeline: the rule that pairs its collective with the
// other ranks' (the same for every rank) and the collective's key under it, as the analysis
// pairs it (collective_key over the merged timeline's collectives).
QString pairing_of(const TraceDocument& doc, quint32 event) {
  const auto& groups = doc.rankGroups();
  if (groups.empty() || !analysis::is_communication_kernel_event(doc.model(), doc.model().event(event))) return {};
  const analysis::CollectivePairing rule = groups.front().pairing;
  const QString text = QString::fromLatin1(analysis::to_string(rule));
  const int rank = doc.rankGroupOfEvent(event);
  const auto key = rank < 0 ? std::nullopt : analysis::collective_key(doc.rankCollectives(), std::size_t(rank), event, rule);
  if (!key && rule == analysis::CollectivePairing::order) return text;
  if (!key) return text + QStringLiteral(" (left unpaired: its trace names no communicator for it)");
  return text + QStringLiteral(" (%1)").arg(key_text(*key, rule, groups));
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
    add("Name", m.name(e));
    add("Category", m.cat(e));
    add("Row", m.process_label(track.process) + " / " + m.track_label(e.track));
    add("Start", formatDuration(e.ts_ns - doc->index().begin_ns()) + " after the trace start");
    if (e.dur_ns >= 0) add("Duration", formatDuration(e.dur_ns));
    else if (e.is_slice()) add("Duration", QStringLiteral("never closed"));
    add("Depth", QString::number(e.depth));
    const QJsonObject args = QJsonDocument::fromJson(QByteArray::fromStdString(std::string(m.args_json(e)))).object();
    if (const QString pairing = pairing_of(*doc, event_); !pairing.isEmpty()) add("Paired across ranks by", pairing);
    // What a CUDA user looks for first, under the names people use.
    const std::pair<const char*, const char*> first[] = {{"correlation", "Correlation"}, {"grid", "Grid"}, {"block", "Block"},
                                                         {"bytes", "Bytes"}, {"stream", "Stream"}, {"device", "Device"}};
    for (const auto& [key, label] : first)
      if (args.contains(key)) add(label, json_text(args.value(key)));
    for (auto it = args.begin(); it != args.end(); ++it) {
      bool shown = false;
      for (const auto& [key, label] : first) shown |= it.key() == key;
      if (!shown) add(it.key(), json_text(it.value()));
    }
    for (std::uint32_t f : doc->index().flows_of(m, event_)) {
      const auto& flow = m.flows()[f];
      const bool outgoing = flow.from_slice == event_;
      const quint32 other = outgoing ? flow.to_slice : flow.from_slice;
      std::string what = other == kNone ? "(unbound)" : std::string(m.name(m.event(other)));
      what += " [" + std::string(m.string(flow.cat)) + " " + std::to_string(flow.id) + "]";
      add(outgoing ? QStringLiteral("Flow to") : QStringLiteral("Flow from"), what, other);
    }
  }
  endResetModel();
}

void EventDetailsModel::add(QString field, std::string_view value, quint32 target) {
  Row row;
  // What a cell may cut is kept whole as UTF-8 (half a QString's size) for copying and tooltips.
  if (field.size() > kMaxLabelChars) row.whole_field = field.toStdString();  // an arg's key
  if (value.size() > std::size_t(kMaxLabelChars)) row.whole_value.assign(value);
  row.field = capped(std::move(field), kMaxLabelChars);
  row.value = capped(value, kMaxLabelChars);
  row.target = target;
  rows_.push_back(std::move(row));
}

void EventDetailsModel::add(QString field, const QString& value) {
  if (value.size() > kMaxLabelChars) return add(std::move(field), value.toStdString());
  Row row;
  if (field.size() > kMaxLabelChars) row.whole_field = field.toStdString();
  row.field = capped(std::move(field), kMaxLabelChars);
  row.value = value;
  rows_.push_back(std::move(row));
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
  const QString& shown = index.column() == Field ? r.field : r.value;
  const std::string& whole = index.column() == Field ? r.whole_field : r.whole_value;  // empty: nothing cut
  if (role == Qt::DisplayRole) return shown;
  if (role == Qt::ToolTipRole) return whole.empty() ? shown : cappedTooltip(whole);
  if (role == FullTextRole) return whole.empty() ? shown : QString::fromStdString(whole);
  if (role == Qt::UserRole) return r.target == kNone ? QVariant() : QVariant(r.target);
  return {};
}

QVariant EventDetailsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole || orientation != Qt::Horizontal) return {};
  return section == Field ? QStringLiteral("Field") : QStringLiteral("Value");
}

}  // namespace cudascope::gui
