#pragma once
// The allocator-state tab: a slider over the trace entries of the shown device and the
// state after the selected entry, from the model's AllocatorStates (checkpointed replay).

#include <cudascope/gui/loaded_snapshot.h>

#include <QWidget>

#include <memory>

class QLabel;
class QScrollArea;
class QSlider;
class QSpinBox;

namespace cudascope::gui {

class AllocatorStates;
class AllocatorStateView;

class AllocatorStatePage : public QWidget {
  Q_OBJECT
 public:
  explicit AllocatorStatePage(QWidget* parent = nullptr);
  ~AllocatorStatePage() override;
  void setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded);
  // Shows the state after absolute trace entry `entry`.
  void showEntry(int64_t entry);
  AllocatorStateView* view() const { return view_; }
  // Shows the state after the selection's allocation (the current entry when it has none)
  // with its block outlined and scrolled into view.
  void showSelection(uint64_t address, uint32_t entry);
  int64_t entry() const;

 private:
  std::shared_ptr<const LoadedSnapshot> loaded_;
  std::unique_ptr<AllocatorStates> states_;
  QSlider* slider_;
  QSpinBox* spin_;
  QLabel* entry_label_;
  AllocatorStateView* view_;
  QScrollArea* scroll_;
};

}  // namespace cudascope::gui
