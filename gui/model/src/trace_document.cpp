#include <cudascope/gui/trace_document.h>

#include <QTimer>

#include <chrono>
#include <cstdio>

namespace cudascope::gui {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::unique_ptr<LoadedTrace> load_trace_for_view(const QString& path, const std::function<bool(double)>& progress,
                                                 QString& error, bool& cancelled) {
  cancelled = false;
  auto out = std::make_unique<LoadedTrace>();
  analysis::TraceLoadOptions options;
  bool stopped = false;
  options.progress = [&](double f) {
    if (progress && !progress(f * 0.9)) stopped = true;  // the last tenth is indexing
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
  const auto indexing = std::chrono::steady_clock::now();
  out->index = analysis::TimelineIndex::build(out->trace());
  out->search = std::make_unique<analysis::TimelineSearch>(analysis::TimelineSearch::build(out->trace()));
  out->index_seconds = seconds_since(indexing);
  if (progress) progress(1.0);
  return out;
}

TraceDocument::TraceDocument(QString path, std::unique_ptr<LoadedTrace> loaded, QObject* parent)
    : QObject(parent), path_(std::move(path)), loaded_(std::move(loaded)) {
  if (loaded_->follower) {
    timer_ = new QTimer(this);
    connect(timer_, &QTimer::timeout, this, [this] { pollOnce(); });
    if (!loaded_->follower->finished()) setFollowing(true);
  }
}

TraceDocument::~TraceDocument() = default;

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
    loaded_->index.update(follower->model());
    loaded_->search.reset();
    emit grew(added);
  }
  return added;
}

}  // namespace cudascope::gui
