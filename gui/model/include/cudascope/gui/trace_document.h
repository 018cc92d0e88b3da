#pragma once
// One open trace: its model, the timeline index and the search index, and - for a trace
// still being written (`cudascope run` streams it) - follow mode, which polls the file twice
// a second and takes in only what it gained (TraceFollower), never re-reading from the start.
//
// A rank timeline (several rank traces merged into one, rank_timeline.h) whose files are
// still being written is followed too: each unfinished file keeps its own TraceFollower, and
// a follow step polls those, and when any gained events merges every rank again (clocks
// re-aligned on the collectives paired by then) and indexes the result. The step runs on a
// worker thread (it reads no model a view reads: the views read the merged one); the new
// timeline replaces the old on the UI thread (rebuilt(), then grew()). A merge grows with
// the ranks' events (bench/results/ranks.md), so after each step following rests three times
// as long as the step took before the next: at most a quarter of one core, however large. A
// file stops being polled once its trace is complete, and following stops when every file's is.
//
// Lives on the UI thread; the model, index and search are read there. A single trace's follow
// poll runs on the UI thread too, between frames (the model must not change while a view
// reads it). While following is off the model never changes: a rank timeline's step that
// completes after following was switched off (e.g. paused for a range summary) is applied
// when following is switched on again.

#include <cudascope/analysis/timeline_index.h>
#include <cudascope/analysis/timeline_search.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/gui/capped_text.h>
#include <cudascope/gui/rank_timeline.h>

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QStringList>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
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
  QStringList paths;                             // the files merged (a single trace: its path)
  // A rank timeline some of whose files are still unfinished: every rank's file as read so
  // far (a LoadedTrace with a follower, no indexes), by rank, to merge again as they grow.
  // Empty once every file is complete (the sources are freed then).
  std::vector<std::unique_ptr<LoadedTrace>> rank_sources;
  // The file ends before the trace does and has not changed for a while (a killed run, a
  // copy stopped half way): shown up to its last complete event, not followed unless asked.
  bool cut_short = false;
  double quiet_seconds = 0;  // how long the file had not changed when it was read
  analysis::TimelineIndex index;
  std::unique_ptr<analysis::TimelineSearch> search;
  // A rank timeline: each rank's collectives found in `merged`, by rank. Found with the merge,
  // off the UI thread (one pass over the model; seconds for many large ranks).
  std::vector<analysis::RankCollectives> collectives;
  double load_seconds = 0, index_seconds = 0;
  const analysis::TraceModel& trace() const { return follower ? follower->model() : *merged; }
};

// What one follow step of a rank timeline produced (follow_rank_sources()).
struct RankFollowStep {
  std::unique_ptr<LoadedTrace> rebuilt;                // the timeline merged again; null when nothing grew
  std::vector<std::unique_ptr<LoadedTrace>> sources;  // when not rebuilt: the sources, handed back
  long long added = 0;                                 // events the files gained
  QString error;                                       // a file could not be read (or merged); sources handed back
  double seconds = 0;                                  // how long the step took (poll, merge, indexes)
};
// Polls every unfinished file of `sources` (LoadedTrace::rank_sources) once and, when any
// gained events, merges them all again and indexes the merge (rebuilt holds the sources while
// some file is unfinished). Any thread; nothing else may use the sources meanwhile.
RankFollowStep follow_rank_sources(std::vector<std::unique_ptr<LoadedTrace>> sources);

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
  // The rank group of an event's process (-1: of no rank, and every event of a single trace).
  int rankGroupOfEvent(quint32 event) const;
  // A rank timeline: each rank group's collectives as the analysis finds them in the merged
  // model (analysis::collectives_by_rank: each rank's kernels matched with its own launches),
  // for the details of a collective's kernel (analysis::collective_key). Found by the loader
  // or the follow step that merged the timeline; empty for a single trace.
  const std::vector<analysis::RankCollectives>& rankCollectives() const { return loaded_->collectives; }
  const analysis::TraceModel& model() const { return loaded_->trace(); }
  // An interned name as the timeline labels it: C++ names shortened as Nsight shows them
  // (analysis/cpp_names.h), cut to `max_chars` (capped_text.h). Not cached: callers that
  // draw often cache it.
  QString shortName(std::uint32_t name, qsizetype max_chars = kWhole) const;
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
  // A single trace read through a follower, or a rank timeline with files still unfinished.
  bool canFollow() const;
  bool following() const;
  // A rank timeline: the files not complete yet as of the model shown (those a follow step
  // polls); empty otherwise.
  QStringList unfinishedPaths() const { return unfinished_; }
  // Starts or stops polling (every `interval_ms`); a no-op for a document with nothing to
  // follow. Switching on first applies a rank timeline's step that completed while it was off.
  void setFollowing(bool on, int interval_ms = 500);
  // A rank timeline's follow step is polling and merging on a worker thread.
  bool stepping() const { return stepping_; }
  // Following rests this many times a rank step's duration after it before starting another.
  static constexpr int kRestPerStepTime = 3;
  // When the next rank step may start (steady clock); a timer tick before it starts none.
  std::chrono::steady_clock::time_point nextStepNotBefore() const { return next_step_not_before_; }
  double lastStepSeconds() const { return last_step_seconds_; }  // the last rank step's duration
  // One poll now, on the calling (UI) thread: events added, -1 on error (followError emitted).
  // A rank timeline: waits for a step in flight, applies it, then steps once more in place.
  long long pollOnce();

 signals:
  // A rank timeline's model, index and rows were replaced by a merge of its grown files:
  // event, name and row ids of the old model mean nothing now. Emitted just before grew().
  void rebuilt();
  // The model gained `added` events; 0: following ended as the file (or a rank timeline's
  // last file) closed without new ones.
  void grew(qint64 added);
  void followError(const QString& message);

 private:
  void startStep();  // timer tick of a rank timeline: one follow step on a worker thread
  // Takes a finished step's outcome; `apply` false keeps a rebuilt timeline pending.
  long long takeStep(RankFollowStep step, bool apply);
  long long applyRebuilt(std::unique_ptr<LoadedTrace> merged, long long added);
  void noteUnfinished();  // unfinished_ from the rank sources (when not out in a step)
  int rankGroupOfProcess(std::uint32_t process) const;  // -1: none (a single trace has no process_rank)

  QString path_;
  std::unique_ptr<LoadedTrace> loaded_;
  QTimer* timer_ = nullptr;
  QFutureWatcher<std::shared_ptr<RankFollowStep>>* step_ = nullptr;
  bool stepping_ = false;                  // a step owns the rank sources
  std::chrono::steady_clock::time_point next_step_not_before_{};
  double last_step_seconds_ = 0;
  std::unique_ptr<LoadedTrace> pending_;   // a rebuilt timeline waiting for following to resume
  long long pending_added_ = 0;
  QStringList unfinished_;
};

}  // namespace cudascope::gui
