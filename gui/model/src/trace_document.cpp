#include <cudascope/gui/trace_document.h>

#include <QDateTime>
#include <QFileInfo>
#include <QTimer>
#include <QtConcurrent/QtConcurrentRun>

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

// Reads `path` through a TraceFollower; `progress` gets the fraction read. The follower keeps
// its progress callback for later polls, so the callback reaches `progress` only during this
// first read and through state it shares, never through this frame's locals.
std::unique_ptr<LoadedTrace> read_trace(const QString& path, const std::function<bool(double)>& progress, QString& error,
                                        bool& cancelled) {
  cancelled = false;
  auto out = std::make_unique<LoadedTrace>();
  out->paths = QStringList{path};
  struct FirstRead {
    std::function<bool(double)> progress;
    bool active = true, stopped = false;
  };
  auto first = std::make_shared<FirstRead>();
  first->progress = progress;
  analysis::TraceLoadOptions options;
  options.progress = [first](double f) {
    if (!first->active) return true;
    if (first->progress && !first->progress(f)) first->stopped = true;
    return !first->stopped;
  };
  const auto start = std::chrono::steady_clock::now();
  out->follower = std::make_unique<analysis::TraceFollower>(path.toStdString(), options);
  const long long read = out->follower->poll();
  first->active = false;
  if (read < 0) {
    cancelled = first->stopped;
    error = first->stopped ? path + ": loading cancelled" : QString::fromStdString(out->follower->error());
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

// Unfinished and not cut short: a file to follow from the start.
bool being_written(const LoadedTrace& t) {
  if (t.follower) return !t.follower->finished() && !t.cut_short;
  return std::any_of(t.rank_sources.begin(), t.rank_sources.end(),
                     [](const std::unique_ptr<LoadedTrace>& s) { return being_written(*s); });
}

// Merges rank traces read by read_trace() (by rank) into one indexed timeline. While some
// file is unfinished the timeline keeps `sources` (to merge again as they grow); once all
// are complete they are freed. On error `sources` stay with the caller.
std::unique_ptr<LoadedTrace> merge_rank_set(std::vector<std::unique_ptr<LoadedTrace>>& sources, QString& error) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<RankSource> ranks;
  double load_seconds = 0;
  bool unfinished = false;
  auto out = std::make_unique<LoadedTrace>();
  for (const auto& s : sources) {
    ranks.push_back({s->paths.front(), &s->trace()});
    load_seconds += s->load_seconds;
    unfinished = unfinished || !s->follower->finished();
    if (s->cut_short) {
      out->cut_short = true;
      out->quiet_seconds = std::max(out->quiet_seconds, s->quiet_seconds);
    }
  }
  MergedRankTimeline merged = merge_rank_traces(ranks);
  if (!merged.model) {
    error = QString::fromStdString(merged.error);
    return nullptr;
  }
  out->merged = std::move(merged.model);
  out->ranks = std::move(merged.groups);
  out->process_rank = std::move(merged.process_group);
  for (const auto& g : out->ranks) out->paths << g.path;
  if (unfinished) out->rank_sources = std::move(sources);
  sources.clear();  // complete: the sources are no longer needed
  out->collectives = analysis::collectives_by_rank(*out->merged, out->process_rank, out->ranks.size());
  out->load_seconds = load_seconds + seconds_since(start);
  build_indexes(*out);
  return out;
}

// One follow step's work (follow_rank_sources, which times it).
RankFollowStep poll_and_merge(std::vector<std::unique_ptr<LoadedTrace>> sources) {
  RankFollowStep step;
  for (auto& s : sources) {
    if (s->follower->finished()) continue;
    const long long added = s->follower->poll();
    if (added < 0) {
      step.error = QString::fromStdString(s->follower->error());
      step.sources = std::move(sources);
      return step;
    }
    if (added > 0) s->cut_short = false;  // it grew: it was being written after all
    step.added += added;
  }
  const bool complete = std::all_of(sources.begin(), sources.end(),
                                    [](const std::unique_ptr<LoadedTrace>& s) { return s->follower->finished(); });
  if (step.added == 0) {
    // Nothing new to show; a set whose last file closed without new events needs no sources.
    if (!complete) step.sources = std::move(sources);
    return step;
  }
  step.rebuilt = merge_rank_set(sources, step.error);
  if (!step.rebuilt) step.sources = std::move(sources);
  return step;
}

}  // namespace

RankFollowStep follow_rank_sources(std::vector<std::unique_ptr<LoadedTrace>> sources) {
  const auto start = std::chrono::steady_clock::now();
  RankFollowStep step = poll_and_merge(std::move(sources));
  step.seconds = seconds_since(start);
  return step;
}

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
    std::vector<std::unique_ptr<LoadedTrace>> sources;
    for (std::size_t k : sets[std::size_t(s)]) sources.push_back(std::move(read[k]));
    QString error;
    auto out = merge_rank_set(sources, error);
    if (!out) {
      errors << error;
      continue;
    }
    docs.push_back({out->paths.front(), std::move(out)});
  }
  if (progress) progress(1.0);
  return docs;
}

TraceDocument::TraceDocument(QString path, std::unique_ptr<LoadedTrace> loaded, QObject* parent)
    : QObject(parent), path_(std::move(path)), loaded_(std::move(loaded)) {
  if (loaded_->follower || !loaded_->rank_sources.empty()) {
    timer_ = new QTimer(this);
    if (loaded_->follower) {
      connect(timer_, &QTimer::timeout, this, [this] { pollOnce(); });
    } else {
      step_ = new QFutureWatcher<std::shared_ptr<RankFollowStep>>(this);
      connect(timer_, &QTimer::timeout, this, &TraceDocument::startStep);
      connect(step_, &QFutureWatcher<std::shared_ptr<RankFollowStep>>::finished, this, [this] {
        if (!stepping_) return;  // pollOnce() took it already
        takeStep(std::move(*step_->result()), following());
      });
    }
    noteUnfinished();
    if (being_written(*loaded_)) setFollowing(true);
  }
}

TraceDocument::~TraceDocument() {
  if (step_) step_->waitForFinished();  // the step owns the sources until it ends
}

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
  if (isRankTimeline()) {
    QStringList cut;
    for (const auto& s : loaded_->rank_sources)
      if (s->cut_short) cut << QFileInfo(s->paths.front()).fileName();
    if (cut.isEmpty()) cut << tr("a rank's file");  // the files are out in a follow step
    return tr("CUT SHORT: %1 ends before its trace does (unchanged for %2); shown up to its last complete event: events "
              "recorded after the cut are missing. Tick 'follow' if it is still being written.")
        .arg(cut.join(QStringLiteral(", ")), age);
  }
  return tr("CUT SHORT: the file ends before the trace does (unchanged for %1); shown up to its last complete event "
            "(%2 events): rows and events recorded after the cut are missing. Tick 'follow' if it is still being written.")
      .arg(age)
      .arg(model().event_count());
}

bool TraceDocument::canFollow() const {
  return loaded_->follower != nullptr || !loaded_->rank_sources.empty() || stepping_ || pending_ != nullptr;
}

void TraceDocument::noteUnfinished() {
  unfinished_.clear();
  for (const auto& s : loaded_->rank_sources)
    if (!s->follower->finished()) unfinished_ << s->paths.front();
}

QStringList TraceDocument::paths() const { return loaded_->paths.isEmpty() ? QStringList{path_} : loaded_->paths; }

QString TraceDocument::shortName(std::uint32_t name, qsizetype max_chars) const {
  return cappedShortName(model().string(name), max_chars);
}

int TraceDocument::rankGroupOfProcess(std::uint32_t process) const {
  return process < loaded_->process_rank.size() ? loaded_->process_rank[process] : -1;
}

int TraceDocument::rankGroupOfRow(quint32 row) const {
  const auto& rows = index().rows();
  return row < rows.size() ? rankGroupOfProcess(rows[row].process) : -1;
}

int TraceDocument::rankGroupOfEvent(quint32 event) const {
  return event < model().event_count() ? rankGroupOfProcess(model().tracks()[model().event(event).track].process) : -1;
}

const analysis::TimelineSearch& TraceDocument::search() {
  if (!loaded_->search)
    loaded_->search = std::make_unique<analysis::TimelineSearch>(analysis::TimelineSearch::build(model()));
  return *loaded_->search;
}

bool TraceDocument::following() const { return timer_ && timer_->isActive(); }

void TraceDocument::setFollowing(bool on, int interval_ms) {
  if (!timer_) return;
  if (!on) {
    timer_->stop();
    return;
  }
  if (pending_) applyRebuilt(std::move(pending_), pending_added_);
  if (loaded_->follower || !loaded_->rank_sources.empty() || stepping_) timer_->start(interval_ms);
}

long long TraceDocument::pollOnce() {
  if (step_) {
    long long added = 0;
    if (stepping_) {
      step_->waitForFinished();
      added = takeStep(std::move(*step_->result()), true);
      if (added < 0) return added;
    }
    if (pending_) added += applyRebuilt(std::move(pending_), pending_added_);
    if (loaded_->rank_sources.empty()) return added;
    const long long more = takeStep(follow_rank_sources(std::move(loaded_->rank_sources)), true);
    return more < 0 ? more : added + more;
  }
  auto& follower = loaded_->follower;
  if (!follower) return 0;
  const long long added = follower->poll();
  if (added < 0) {
    setFollowing(false);
    emit followError(QString::fromStdString(follower->error()));
    return added;
  }
  const bool was_following = following();
  if (follower->finished()) setFollowing(false);
  if (added > 0) {
    loaded_->cut_short = false;  // it grew: it was being written after all
    loaded_->index.update(follower->model());
    loaded_->search.reset();
    emit grew(added);
  } else if (was_following && !following()) {
    emit grew(0);  // closed without new events: following ended all the same
  }
  return added;
}

void TraceDocument::startStep() {
  if (stepping_ || loaded_->rank_sources.empty()) return;  // the last step is still merging
  if (std::chrono::steady_clock::now() < next_step_not_before_) return;  // resting after a long merge
  stepping_ = true;
  auto sources = std::make_shared<std::vector<std::unique_ptr<LoadedTrace>>>(std::move(loaded_->rank_sources));
  loaded_->rank_sources.clear();
  step_->setFuture(QtConcurrent::run(
      [sources] { return std::make_shared<RankFollowStep>(follow_rank_sources(std::move(*sources))); }));
}

long long TraceDocument::takeStep(RankFollowStep step, bool apply) {
  stepping_ = false;
  last_step_seconds_ = step.seconds;
  next_step_not_before_ = std::chrono::steady_clock::now() +
                          std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                              std::chrono::duration<double>(step.seconds * kRestPerStepTime));
  if (!step.rebuilt) {
    loaded_->rank_sources = std::move(step.sources);
    noteUnfinished();
    if (!step.error.isEmpty()) {
      setFollowing(false);
      emit followError(step.error);
      return -1;
    }
    if (loaded_->rank_sources.empty() && following()) {
      setFollowing(false);  // every file is complete (the last closed without new events)
      emit grew(0);
    }
    return 0;
  }
  if (!apply) {
    // A view or a range summary reads the model while following is off: keep it for later.
    pending_added_ += step.added;
    pending_ = std::move(step.rebuilt);
    return 0;
  }
  return applyRebuilt(std::move(step.rebuilt), step.added);
}

long long TraceDocument::applyRebuilt(std::unique_ptr<LoadedTrace> merged, long long added) {
  pending_added_ = 0;
  loaded_ = std::move(merged);
  noteUnfinished();
  if (loaded_->rank_sources.empty()) setFollowing(false);  // every file is complete
  emit rebuilt();
  emit grew(added);
  return added;
}

}  // namespace cudascope::gui
