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
#include <cudascope/gui/rank_timeline.h>

#include <QObject>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <vector>

class QTimer;

namespace cudascope::gui {

// What loading produces off the UI thread: the follower holding the model (or, for several
// rank traces merged into one timeline, the merged model), and its indexes.
struct LoadedTrace {
  std::unique_ptr<analysis::TraceFollower> follower;
  std::unique_ptr<analysis::TraceModel> merged;  // set instead of `follower` for a rank timeline
  std::vector<RankGroup> ranks;                  // of `merged`, by rank
  std::vector<int> process_rank;                 // per process of `merged`: index into ranks (-1 none)
  QStringList paths;                             // the files merged (empty: the one path)
  // The file ends before the trace does and has not changed for a while (a killed run, a
  // copy stopped half way): shown up to its last complete event, not followed unless asked.
  bool cut_short = false;
  double quiet_seconds = 0;  // how long the file had not changed when it was read
  analysis::TimelineIndex index;
  std::unique_ptr<analysis::TimelineSearch> search;
  double load_seconds = 0, index_seconds = 0;
  const analysis::TraceModel& trace() const { return follower ? follower->model() : *merged; }
};

// A trace file that ends before its trace does is taken as still being written when it
// changed within the last `kGrowingSeconds`, and as cut short otherwise.
inline constexpr double kGrowingSeconds = 10.0;

// Reads `path` and builds its indexes (any thread). The file (plain or gzip) is read
// through a TraceFollower, so a trace still being written can be followed afterwards. `progress` gets the fraction read and returns false to cancel. Empty error on success.
std::unique_ptr<LoadedTrace> load_trace_for_view(const QString& path, const std::function<bool(double)>& progress,
                                                 QString& error, bool& cancelled);

// One document of several files opened together: its path (a rank timeline: the lowest
// rank's file) and what was loaded.
struct LoadedDocument {
  QString path;
  std::unique_ptr<LoadedTrace> trace;
};
// Reads several traces (any thread): those that form rank sets (rank_sets()) are merged into
// one timeline each, the others are documents of their own, in the order of `paths` (a rank
// timeline where its first file was). A file that fails adds its message to `errors`.
std::vector<LoadedDocument> load_traces_for_view(const QStringList& paths, const std::function<bool(double)>& progress,
                                                 QStringList& errors, bool& cancelled);

class TraceDocument : public QObject {
  Q_OBJECT
 public:
  // Takes what load_trace_for_view() produced; a document whose follower has not reached
  // the end of the trace starts following.
  TraceDocument(QString path, std::unique_ptr<LoadedTrace> loaded, QObject* parent = nullptr);
  ~TraceDocument() override;

  const QString& path() const { return path_; }
  // The file name, or for a rank timeline "ranks 0-3 (4 traces)".
  QString displayName() const;
  // Every file shown (one, or the rank traces merged).
  QStringList paths() const;
  // A rank timeline: its ranks (by rank) and, per timeline row, the rank group it belongs
  // to (index into rankGroups(); -1 for a row of no rank, and for every row of a single trace).
  const std::vector<RankGroup>& rankGroups() const { return loaded_->ranks; }
  bool isRankTimeline() const { return !loaded_->ranks.empty(); }
  int rankGroupOfRow(quint32 row) const;
  const analysis::TraceModel& model() const { return loaded_->trace(); }
  // An interned name as the timeline labels it: C++ names shortened as Nsight shows them
  // (analysis/cpp_names.h). Not cached: callers that draw often cache it.
  QString shortName(std::uint32_t name) const;
  const analysis::TimelineIndex& index() const { return loaded_->index; }
  double loadSeconds() const { return loaded_->load_seconds; }
  double indexSeconds() const { return loaded_->index_seconds; }
  // Built on first use after loading or growing (a search over a grown trace sees it all).
  const analysis::TimelineSearch& search();

  // The file ends before the trace does and was not growing when read (LoadedTrace::cut_short);
  // false again once following it finds more.
  bool cutShort() const { return loaded_->cut_short; }
  // What the status bar says of a cut-short trace (empty otherwise).
  QString cutShortText() const;
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
