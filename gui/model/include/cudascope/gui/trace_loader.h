#pragma once
// Loads a trace for the viewer on a worker thread (QtConcurrent) with progress and cancel.
// Call order: start() -> progress()* -> exactly one of loaded() / failed(). Signals arrive on
// the loader's (UI) thread. Several loaders may run at once (one per file being opened).

#include <cudascope/gui/trace_document.h>

#include <QFutureWatcher>
#include <QObject>

#include <atomic>
#include <memory>

namespace cudascope::gui {

class TraceLoader : public QObject {
  Q_OBJECT
 public:
  explicit TraceLoader(QObject* parent = nullptr);
  ~TraceLoader() override;
  void start(const QString& path);
  void cancel();
  bool busy() const { return watcher_.isRunning(); }
  // Blocks until the running load (if any) has finished; for tests and shutdown.
  void wait() { watcher_.waitForFinished(); }

 signals:
  void progress(int permille);
  // The document is parented to no one: the receiver takes it.
  void loaded(cudascope::gui::TraceDocument* document);
  void failed(const QString& message, bool cancelled);

 private:
  struct Result {
    std::shared_ptr<LoadedTrace> trace;
    QString error;
    bool cancelled = false;
  };
  QFutureWatcher<Result> watcher_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  QString path_;
};

}  // namespace cudascope::gui
