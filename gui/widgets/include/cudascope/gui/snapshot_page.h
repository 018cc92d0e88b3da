#pragma once
// One open allocator snapshot: its views in inner tabs (Active memory, Cached segments,
// Allocator state, Segments, Blocks, Trace, Figures, Compare) beside the stack panel, all
// linked through one SnapshotSelection: a click on an allocation anywhere selects it
// everywhere (its block in Allocator state at its entry, its rows in the tables, its span
// on both timelines, its stack pinned in the panel), the two timelines share one zoom, and
// the x axis (real time or event order) is chosen once for both.

#include <cudascope/gui/snapshot_selection.h>

#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QTabWidget;

namespace cudascope::gui {

class AllocatorStatePage;
class CompareModel;
class FiguresModel;
class RecordTablePage;
class StackPanel;
class TimelineView;

class SnapshotPage : public QWidget {
  Q_OBJECT
 public:
  explicit SnapshotPage(QWidget* parent = nullptr);
  ~SnapshotPage() override;
  void setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded, const QString& path);
  const std::shared_ptr<const LoadedSnapshot>& snapshot() const { return loaded_; }
  const QString& path() const { return path_; }
  // Shows the comparison of this snapshot (A) with `other` (B).
  void setComparison(std::shared_ptr<const LoadedSnapshot> other, const QString& other_path);
  bool hasComparison() const { return compared_ != nullptr; }

  QTabWidget* tabs() const { return tabs_; }
  SnapshotSelection* selection() const { return selection_; }
  StackPanel* stackPanel() const { return stack_; }
  TimelineView* activeView() const { return active_; }
  TimelineView* segmentView() const { return segments_; }
  AllocatorStatePage* statePage() const { return state_; }
  RecordTablePage* segmentTable() const { return segment_table_; }
  RecordTablePage* blockTable() const { return block_table_; }
  RecordTablePage* traceTable() const { return trace_table_; }
  CompareModel* compareModel() const { return compare_; }
  QComboBox* axisBox() const { return axis_; }
  // Puts keyboard focus on the view shown (the plot, after loading).
  void focusView();

 signals:
  void comparisonShown();
  void compareRequested();

 private:
  void showSelection(const MemorySelection& selection);
  void setAxis(SnapshotSelection::Axis axis);
  void updateComparison();

  std::shared_ptr<const LoadedSnapshot> loaded_, compared_;
  QString path_, compared_path_;
  EventOrderTimelines order_;
  SnapshotSelection* selection_;
  QTabWidget* tabs_;
  TimelineView* active_;
  TimelineView* segments_;
  AllocatorStatePage* state_;
  RecordTablePage* segment_table_;
  RecordTablePage* block_table_;
  RecordTablePage* trace_table_;
  FiguresModel* figures_;
  CompareModel* compare_;
  QComboBox* group_by_;
  QComboBox* axis_;
  QLabel* compare_label_;
  StackPanel* stack_;
  bool syncing_ = false;
};

}  // namespace cudascope::gui
