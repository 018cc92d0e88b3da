#pragma once
// Loads and indexes a snapshot on a worker thread. Call order: start() -> progress()* ->
// exactly one of loaded() / failed(); cancel() at any time makes it end with failed()
// (cancelled = true). Signals are delivered on the thread that owns the loader (the UI).
// One load at a time: start() while busy cancels the running one first.

#include <cudascope/gui/loaded_snapshot.h>

#include <QObject>
#include <QString>

#include <atomic>
#include <memory>
#include <thread>

namespace cudascope::gui {

class SnapshotLoader : public QObject {
  Q_OBJECT
 public:
  explicit SnapshotLoader(QObject* parent = nullptr);
  ~SnapshotLoader() override;

  void start(const QString& path);
  void cancel();
  bool busy() const { return busy_; }
  // Blocks until the running load (if any) has finished; for tests and shutdown.
  void wait();

 signals:
  void progress(int permille);
  void loaded(std::shared_ptr<const cudascope::gui::LoadedSnapshot> result, const QString& path);
  void failed(const QString& message, bool cancelled);

 private:
  std::thread worker_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  bool busy_ = false;
  unsigned generation_ = 0;
};

}  // namespace cudascope::gui
