#include <cudascope/gui/trace_document.h>

#include <cudascope/analysis/cpp_names.h>

#include <QDateTime>
#include <QFileInfo>
#include <QTimer>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace cudascope::gui {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

namespace {

// Reads `path` through a TraceFollower; `progress` gets the fraction read.
std::unique_ptr<LoadedTrace> read_trace(const QString& path, const std::function<bool(double)>& progress, QString& error,
                                        bool& cancelled) {
  cancelled = false;
  auto out = std::make_unique<LoadedTrace>();
  analysis::TraceLoadOptions options;
  bool stopped = false;
  options.progress = [&](double f) {
    if (progress && !progress(f)) stopped = true;
    return !stopped;
  };
  const auto start = std::chrono::steady_clock::now();
  out->follower = std::make_unique<analysis::TraceFollower>(path.toStdString(), options);
  if (out->follower->poll() < 0) {
    cancelled = stopped;
    error = stopped ? path + ": loading cancelled" : QString::fromStdString(out->follower->error());
    return nullptr;
  }
  if (out->follower->model().event_count() == 0 && out->follower->finished()) {
    error = path + ": the trace holds no events";
    return nullptr;
  }
  out->load_seconds = seconds_since(start);
  if (!out->follower->finished()) {
    // Unfinished: still being written (follow it), or cut short (say so, do not follow).
    const QDateTime modified = QFileInfo(path).lastModified();
    out->quiet_seconds = modified.isValid() ? double(modified.msecsTo(QDateTime::currentDateTime())) / 1000.0 : 0.0;
    out->cut_short = out->quiet_seconds > kGrowingSeconds;
  }
  return out;
}

void build_indexes(LoadedTrace& out) {
  const auto indexing = std::chrono::steady_clock::now();
  out.index = analysis::TimelineIndex::build(out.trace());
  out.search = std::make_unique<analysis::TimelineSearch>(analysis::TimelineSearch::build(out.trace()));
  out.index_seconds = seconds_since(indexing);
}

}  // namespace

std::unique_ptr<LoadedTrace> load_trace_for_view(const QString& path, const std::function<bool(double)>& progress,
                                                 QString& error, bool& cancelled) {
  // The last tenth of the progress is indexing.
  auto out = read_trace(path, [&](double f) { return !progress || progress(f * 0.9); }, error, cancelled);
  if (!out) return nullptr;
  build_indexes(*out);
  if (progress) progress(1.0);
  return out;
}

std::vector<LoadedDocument> load_traces_for_view(const QStringList& paths, const std::function<bool(double)>& progress,
                                                 QStringList& errors, bool& cancelled) {
  cancelled = false;
  std::vector<LoadedDocument> docs;
  if (paths.size() == 1) {
    QString error;
    auto one = load_trace_for_view(paths.front(), progress, error, cancelled);
    if (one) docs.push_back({paths.front(), std::move(one)});
    else errors << error;
    return docs;
  }
  // Read every file (the first 70% of the progress), then merge and index.
  const double n = std::max<qsizetype>(paths.size(), 1);
  std::vector<std::unique_ptr<LoadedTrace>> read(std::size_t(paths.size()));
  for (qsizetype i = 0; i < paths.size(); ++i) {
    QString error;
    read[std::size_t(i)] = read_trace(paths[i], [&](double f) { return !progress || progress(0.7 * (double(i) + f) / n); },
                                      error, cancelled);
    if (cancelled) {
      errors << error;
      return {};
    }
    if (!read[std::size_t(i)]) errors << error;
  }
  std::vector<const analysis::TraceModel*> models;
  for (const auto& r : read) models.push_back(r ? &r->trace() : nullptr);
  const auto sets = rank_sets(models);
  std::vector<int> set_of(read.size(), -1);
  for (std::size_t s = 0; s < sets.size(); ++s)
    for (std::size_t i : sets[s]) set_of[i] = int(s);
  std::vector<bool> set_done(sets.size(), false);
  for (std::size_t i = 0; i < read.size(); ++i) {
    if (progress && !progress(0.7 + 0.3 * double(i) / double(read.size()))) {
      cancelled = true;
      errors << QStringLiteral("loading cancelled");
      return {};
    }
    if (!read[i]) continue;
    if (set_of[i] < 0) {
      build_indexes(*read[i]);
      docs.push_back({paths[qsizetype(i)], std::move(read[i])});
      continue;
    }
    const int s = set_of[i];
    if (set_done[std::size_t(s)]) continue;
    set_done[std::size_t(s)] = true;
    const auto start = std::chrono::steady_clock::now();
    std::vector<RankSource> sources;
    double load_seconds = 0;
    for (std::size_t k : sets[std::size_t(s)]) {
      sources.push_back({paths[qsizetype(k)], &read[k]->trace()});
      load_seconds += read[k]->load_seconds;
    }
    MergedRankTimeline merged = merge_rank_traces(sources);
    if (!merged.model) {
      errors << QString::fromStdString(merged.error);
      continue;
    }
    auto out = std::make_unique<LoadedTrace>();
    out->merged = std::move(merged.model);
    out->ranks = std::move(merged.groups);
    out->process_rank = std::move(merged.process_group);
    for (const auto& g : out->ranks) out->paths << g.path;
    for (std::size_t k : sets[std::size_t(s)]) read[k].reset();  // the sources are no longer needed
    out->load_seconds = load_seconds + seconds_since(start);
    build_indexes(*out);
    docs.push_back({out->paths.front(), std::move(out)});
  }
  if (progress) progress(1.0);
  return docs;
}

TraceDocument::TraceDocument(QString path, std::unique_ptr<LoadedTrace> loaded, QObject* parent)
    : QObject(parent), path_(std::move(path)), loaded_(std::move(loaded)) {
  if (loaded_->follower) {
    timer_ = new QTimer(this);
    connect(timer_, &QTimer::timeout, this, [this] { pollOnce(); });
    if (!loaded_->follower->finished() && !loaded_->cut_short) setFollowing(true);
  }
}

TraceDocument::~TraceDocument() = default;

QString TraceDocument::displayName() const {
  if (!isRankTimeline()) return QFileInfo(path_).fileName();
  const auto& ranks = loaded_->ranks;
  return QStringLiteral("ranks %1-%2 (%3 traces)").arg(ranks.front().rank).arg(ranks.back().rank).arg(ranks.size());
}

QString TraceDocument::cutShortText() const {
  if (!cutShort()) return {};
  const double quiet = loaded_->quiet_seconds;
  const QString age = quiet < 120 ? tr("%1 s").arg(qint64(quiet)) : quiet < 7200 ? tr("%1 min").arg(qint64(quiet / 60))
                                                                                   : tr("%1 h").arg(qint64(quiet / 3600));
  return tr("CUT SHORT: the file ends before the trace does (unchanged for %1); shown up to its last complete event "
            "(%2 events): rows and events recorded after the cut are missing. Tick 'follow' if it is still being written.")
      .arg(age)
      .arg(model().event_count());
}

QStringList TraceDocument::paths() const { return loaded_->paths.isEmpty() ? QStringList{path_} : loaded_->paths; }

QString TraceDocument::shortName(std::uint32_t name) const {
  return QString::fromStdString(analysis::shorten_cpp_name(model().string(name)));
}

int TraceDocument::rankGroupOfRow(quint32 row) const {
  const auto& rows = index().rows();
  if (!isRankTimeline() || row >= rows.size()) return -1;
  const std::uint32_t p = rows[row].process;
  return p < loaded_->process_rank.size() ? loaded_->process_rank[p] : -1;
}

const analysis::TimelineSearch& TraceDocument::search() {
  if (!loaded_->search)
    loaded_->search = std::make_unique<analysis::TimelineSearch>(analysis::TimelineSearch::build(model()));
  return *loaded_->search;
}

bool TraceDocument::following() const { return timer_ && timer_->isActive(); }

void TraceDocument::setFollowing(bool on, int interval_ms) {
  if (!timer_) return;
  if (on) timer_->start(interval_ms);
  else timer_->stop();
}

long long TraceDocument::pollOnce() {
  auto& follower = loaded_->follower;
  if (!follower) return 0;
  const long long added = follower->poll();
  if (added < 0) {
    setFollowing(false);
    emit followError(QString::fromStdString(follower->error()));
    return added;
  }
  if (follower->finished()) setFollowing(false);
  if (added > 0) {
    loaded_->cut_short = false;  // it grew: it was being written after all
    loaded_->index.update(follower->model());
    loaded_->search.reset();
    emit grew(added);
  }
  return added;
}

}  // namespace cudascope::gui
