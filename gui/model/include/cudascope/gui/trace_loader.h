#pragma once
// Loads a trace for the viewer on a worker thread (QtConcurrent) with progress and cancel.
// Call order: start(path) -> progress()* -> exactly one of loaded() / failed() -> finished().
// start(paths) for several files opened together (load_traces_for_view(): rank traces become
// one timeline): progress()* -> loaded() per document and failed() per file that could not
// be read (or once, cancelled) -> finished(). Signals arrive on the loader's (UI) thread.
// Several loaders may run at once.

#include <cudascope/gui/trace_document.h>

#include <QFutureWatcher>
#include <QObject>

#include <atomic>
#include <memory>
#include <utility>
#include <vector>

namespace cudascope::gui {

class TraceLoader : public QObject {
  Q_OBJECT
 public:
  explicit TraceLoader(QObject* parent = nullptr);
  ~TraceLoader() override;
  void start(const QString& path);
  void start(const QStringList& paths);
  void cancel();
  bool busy() const { return watcher_.isRunning(); }
  // Blocks until the running load (if any) has finished; for tests and shutdown.
  void wait() { watcher_.waitForFinished(); }

 signals:
  void progress(int permille);
  // The document is parented to no one: the receiver takes it.
  void loaded(cudascope::gui::TraceDocument* document);
  void failed(const QString& message, bool cancelled);
  // After the last loaded() / failed() of a start().
  void finished();

 private:
  struct Result {
    std::vector<std::pair<QString, std::shared_ptr<LoadedTrace>>> documents;
    QStringList errors;
    bool cancelled = false;
  };
  QFutureWatcher<Result> watcher_;
  std::shared_ptr<std::atomic<bool>> cancel_;
};

}  // namespace cudascope::gui
