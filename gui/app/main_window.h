#pragma once
// The viewer's main window: File > Open / Open Recent / Compare with..., Help > Keyboard
// shortcuts, drag-and-drop of files, a progress bar with Cancel while files load off the UI
// thread, and one tab per open document: each snapshot (a SnapshotPage: its views linked by
// one selection, beside the pinned stack) and each trace (a TracePage); rank traces opened
// together share one tab, one timeline. Files are told apart by content, not by name; every
// error names its file. The window opens sized to its screen.

#include <cudascope/gui/loaded_snapshot.h>

#include <QMainWindow>
#include <QStringList>

#include <memory>

class QLabel;
class QMenu;
class QProgressBar;
class QPushButton;
class QTabWidget;

namespace cudascope::gui {

class SnapshotLoader;
class SnapshotPage;
class TracePage;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  // Opens a snapshot or a trace in a new tab, by content.
  void openFile(const QString& path);
  // Opens several files: each snapshot in its own tab; the traces together, so that rank
  // traces (distributedInfo) become one timeline in one tab (rank_timeline.h), the others a tab each.
  void openFiles(const QStringList& paths);
  // Compares the snapshot shown (A) with the snapshot at `path` (B).
  void compareWith(const QString& path);
  // The snapshot of the current snapshot tab (the last one shown when a trace tab is current).
  std::shared_ptr<const LoadedSnapshot> current() const;
  // The current snapshot tab, and its views (inner tabs); null before any snapshot.
  SnapshotPage* snapshotPage() const;
  QTabWidget* tabs() const;
  QList<SnapshotPage*> snapshotPages() const;
  // One tab per open document.
  QTabWidget* documents() const { return documents_; }
  // The trace pages, in tab order.
  QList<TracePage*> tracePages() const;
  SnapshotLoader* compareLoader() const { return compare_loader_; }
  QString lastError() const { return last_error_; }
  QString statusText() const;
  // The text of Help > Keyboard shortcuts.
  static QString shortcutsText();
  // The size the window opens at on a screen of `available` pixels (device-independent).
  static QSize initialSize(QSize available);

 signals:
  void snapshotShown();
  void comparisonShown();
  void traceShown(cudascope::gui::TracePage* page);
  void loadFailed(const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void showSnapshot(std::shared_ptr<const LoadedSnapshot> loaded, const QString& path);
  void rememberRecent(const QString& path);
  void rebuildRecentMenu();
  void setBusy(bool busy, const QString& what);
  void updateBusy();
  void openTraces(const QStringList& paths);
  void openSnapshot(const QString& path);
  void fail(const QString& message, const QString& title, bool cancelled);

  SnapshotLoader* compare_loader_;
  SnapshotPage* last_snapshot_ = nullptr;
  QString last_error_;
  QTabWidget* documents_;
  QWidget* welcome_;
  int loads_ = 0;
  QMenu* recent_;
  QProgressBar* progress_;
  QPushButton* cancel_;
  QLabel* status_;
};

}  // namespace cudascope::gui
