#pragma once
// Segments as bars (length proportional to size), blocks coloured by state: allocated
// blocks each in their allocation's colour (the one the Active memory timeline draws it
// in), pending free, inactive (cached, free). The selected block (setSelectedAddress) is
// outlined; a click on a block emits blockClicked. The final state also shows internal
// fragmentation (the unrequested tail of each allocated block, hatched); the header line
// gives reserved/allocated/active, external fragmentation and the largest free block.

#include <cudascope/gui/allocator_states.h>
#include <cudascope/gui/loaded_snapshot.h>

#include <QWidget>

#include <memory>

namespace cudascope::gui {

class AllocatorStateView : public QWidget {
  Q_OBJECT
 public:
  static constexpr QRgb kAllocated = 0xff3f7fbf, kPending = 0xfff0a030, kInactive = 0xff4a4a52, kUnrequested = 0xff9fc4e8;

  explicit AllocatorStateView(QWidget* parent = nullptr);
  // `final_state` enables the requested-size overlay (only the snapshot's own blocks know it).
  void setState(std::shared_ptr<const LoadedSnapshot> loaded, analysis::AllocatorState state, bool final_state);
  const analysis::AllocatorState& state() const { return state_; }
  QSize sizeHint() const override;
  QString describe(QPoint point) const;
  // Outlines the block holding `address` (0: none); its rectangle, empty when not shown.
  void setSelectedAddress(uint64_t address);
  QRect selectedRect() const;
  // The colour an allocated block is drawn in.
  QRgb blockColour(const analysis::StateBlock& block) const;

 signals:
  void blockClicked(quint64 address, quint64 size, quint32 stack, quint32 alloc_entry);

 protected:
  void paintEvent(QPaintEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseReleaseEvent(QMouseEvent*) override;

 private:
  struct Hit {
    int segment = -1, block = -1;
  };
  Hit hitAt(QPoint p) const;
  QRectF blockRect(int segment, const analysis::StateBlock& block) const;

  std::shared_ptr<const LoadedSnapshot> loaded_;
  std::shared_ptr<const analysis::Snapshot> snapshot_;
  analysis::AllocatorState state_;
  bool final_ = false;
  uint64_t max_segment_ = 1;
  uint64_t selected_address_ = 0;
};

}  // namespace cudascope::gui
