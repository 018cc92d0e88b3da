#pragma once
// The viewer's main window: File > Open / Open Recent / Compare with..., a progress bar
// with Cancel while a file loads off the UI thread, and one tab per open document: the
// snapshot (its views in inner tabs, all fed from the same LoadedSnapshot) and each trace
// (a TracePage); rank traces opened together share one tab, one timeline. Files are told
// apart by content, not by name.

#include <cudascope/gui/loaded_snapshot.h>

#include <QMainWindow>
#include <QStringList>

#include <memory>

class QComboBox;
class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QTabWidget;
class QTableView;

namespace cudascope::gui {

class AllocatorStatePage;
class CompareModel;
class FiguresModel;
class RecordTablePage;
class SnapshotLoader;
class TimelineView;
class TracePage;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a snapshot (replacing the one shown) or a trace (in a new tab), by content.
  void openFile(const QString& path);
  // Opens several files: snapshots as openFile(); the traces together, so that rank traces
  // (distributedInfo) become one timeline in one tab (rank_timeline.h), the others a tab each.
  void openFiles(const QStringList& paths);
  void compareWith(const QString& path);
  std::shared_ptr<const LoadedSnapshot> current() const { return current_; }
  // The snapshot's views (inner tabs of the snapshot document).
  QTabWidget* tabs() const { return tabs_; }
  // One tab per open document.
  QTabWidget* documents() const { return documents_; }
  // The trace pages, in tab order.
  QList<TracePage*> tracePages() const;
  SnapshotLoader* loader() const { return loader_; }
  SnapshotLoader* compareLoader() const { return compare_loader_; }
  QString lastError() const { return last_error_; }
  QString statusText() const;

 signals:
  void snapshotShown();
  void comparisonShown();
  void traceShown(cudascope::gui::TracePage* page);
  void loadFailed(const QString& message);

 private:
  void showSnapshot(std::shared_ptr<const LoadedSnapshot> loaded, const QString& path);
  void updateComparison();
  void rememberRecent(const QString& path);
  void rebuildRecentMenu();
  void setBusy(bool busy, const QString& what);
  void openTraces(const QStringList& paths);
  void showSnapshotDocument(const QString& title);

  SnapshotLoader* loader_;
  SnapshotLoader* compare_loader_;
  std::shared_ptr<const LoadedSnapshot> current_;
  std::shared_ptr<const LoadedSnapshot> compared_;
  QString current_path_, compared_path_, last_error_;
  QTabWidget* documents_;
  QWidget* snapshot_page_;
  QTabWidget* tabs_;
  int trace_loads_ = 0;
  TimelineView* active_;
  TimelineView* segments_;
  AllocatorStatePage* state_;
  RecordTablePage* segment_table_;
  RecordTablePage* block_table_;
  RecordTablePage* trace_table_;
  FiguresModel* figures_;
  CompareModel* compare_;
  QComboBox* group_by_;
  QLabel* compare_label_;
  QMenu* recent_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* status_;
};

}  // namespace cudascope::gui
