#pragma once
// One open trace: its model, the timeline index and the search index, and - for a trace
// still being written (`cudascope run` streams it) - follow mode, which polls the file once
// a second and takes in only what it gained (TraceFollower), never re-reading from the start.
//
// Lives on the UI thread; the model, index and search are read there. A follow poll runs on
// the UI thread too, between frames (the model must not change while a view reads it).

#include <cudascope/analysis/timeline_index.h>
#include <cudascope/analysis/timeline_search.h>
#include <cudascope/analysis/trace_loader.h>

#include <QObject>
#include <QString>

#include <functional>
#include <memory>

class QTimer;

namespace cudascope::gui {

// What loading produces off the UI thread: the follower holding the model, and its indexes.
struct LoadedTrace {
  std::unique_ptr<analysis::TraceFollower> follower;
  analysis::TimelineIndex index;
  std::unique_ptr<analysis::TimelineSearch> search;
  double load_seconds = 0, index_seconds = 0;
  const analysis::TraceModel& trace() const { return follower->model(); }
};

// Reads `path` and builds its indexes (any thread). The file (plain or gzip) is read
// through a TraceFollower, so a trace still being written can be followed afterwards. `progress` gets the fraction read and returns false to cancel. Empty error on success.
std::unique_ptr<LoadedTrace> load_trace_for_view(const QString& path, const std::function<bool(double)>& progress,
                                                 QString& error, bool& cancelled);

class TraceDocument : public QObject {
  Q_OBJECT
 public:
  // Takes what load_trace_for_view() produced; a document whose follower has not reached
  // the end of the trace starts following.
  TraceDocument(QString path, std::unique_ptr<LoadedTrace> loaded, QObject* parent = nullptr);
  ~TraceDocument() override;

  const QString& path() const { return path_; }
  const analysis::TraceModel& model() const { return loaded_->trace(); }
  const analysis::TimelineIndex& index() const { return loaded_->index; }
  double loadSeconds() const { return loaded_->load_seconds; }
  double indexSeconds() const { return loaded_->index_seconds; }
  // Built on first use after loading or growing (a search over a grown trace sees it all).
  const analysis::TimelineSearch& search();

  bool canFollow() const { return loaded_->follower != nullptr; }
  bool following() const;
  // Starts or stops polling (every `interval_ms`); a no-op for a document without a follower.
  void setFollowing(bool on, int interval_ms = 500);
  // One poll now: events added, -1 on error (followError emitted).
  long long pollOnce();

 signals:
  void grew(qint64 added);
  void followError(const QString& message);

 private:
  QString path_;
  std::unique_ptr<LoadedTrace> loaded_;
  QTimer* timer_ = nullptr;
};

}  // namespace cudascope::gui
