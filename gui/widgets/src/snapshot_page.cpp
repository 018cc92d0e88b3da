#include <cudascope/gui/snapshot_page.h>

#include "cell_copy.h"

#include <cudascope/gui/allocator_state_page.h>
#include <cudascope/gui/allocator_state_view.h>
#include <cudascope/gui/compare_model.h>
#include <cudascope/gui/figures_model.h>
#include <cudascope/gui/record_table_model.h>
#include <cudascope/gui/record_table_page.h>
#include <cudascope/gui/stack_panel.h>
#include <cudascope/gui/timeline_view.h>

#include <QComboBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

namespace cudascope::gui {

SnapshotPage::SnapshotPage(QWidget* parent) : QWidget(parent) {
  selection_ = new SnapshotSelection(this);
  tabs_ = new QTabWidget;
  active_ = new TimelineView;
  segments_ = new TimelineView;
  state_ = new AllocatorStatePage;
  segment_table_ = new RecordTablePage(RecordTablePage::Kind::segments);
  block_table_ = new RecordTablePage(RecordTablePage::Kind::blocks);
  trace_table_ = new RecordTablePage(RecordTablePage::Kind::trace);
  figures_ = new FiguresModel(this);
  auto* figures_view = new QTableView;
  figures_view->setModel(figures_);
  figures_view->setWordWrap(false);
  figures_view->horizontalHeader()->setStretchLastSection(true);
  figures_view->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);

  compare_ = new CompareModel(this);
  auto* compare_page = new QWidget;
  auto* compare_layout = new QVBoxLayout(compare_page);
  auto* compare_bar = new QHBoxLayout;
  auto* compare_button = new QPushButton(tr("Compare with..."));
  group_by_ = new QComboBox;
  group_by_->addItem(tr("group by user frame"), int(analysis::GroupBy::user_frame));
  group_by_->addItem(tr("group by top frame"), int(analysis::GroupBy::top_frame));
  group_by_->addItem(tr("group by NVTX range"), int(analysis::GroupBy::nvtx_range));
  compare_label_ = new QLabel(tr("Open a second snapshot to see what grew, by allocating frame or NVTX range."));
  compare_bar->addWidget(compare_button);
  compare_bar->addWidget(group_by_);
  compare_bar->addWidget(compare_label_, 1);
  auto* compare_view = new QTableView;
  compare_view->setModel(compare_);
  compare_view->setWordWrap(false);
  copyWholeCells(compare_view);
  compare_view->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  compare_layout->addLayout(compare_bar);
  compare_layout->addWidget(compare_view, 1);

  tabs_->addTab(active_, tr("Active memory"));
  tabs_->addTab(segments_, tr("Cached segments"));
  tabs_->addTab(state_, tr("Allocator state"));
  tabs_->addTab(segment_table_, tr("Segments"));
  tabs_->addTab(block_table_, tr("Blocks"));
  tabs_->addTab(trace_table_, tr("Trace"));
  tabs_->addTab(figures_view, tr("Figures"));
  tabs_->addTab(compare_page, tr("Compare"));
  axis_ = new QComboBox;
  axis_->addItem(tr("x axis: time"), int(SnapshotSelection::Axis::time));
  axis_->addItem(tr("x axis: event order"), int(SnapshotSelection::Axis::event_order));
  axis_->setToolTip(tr("Event order gives each trace entry the same width (idle time takes none), as memory_viz does"));
  tabs_->setCornerWidget(axis_, Qt::TopRightCorner);

  stack_ = new StackPanel;
  auto* split = new QSplitter(Qt::Horizontal);
  split->addWidget(tabs_);
  split->addWidget(stack_);
  split->setStretchFactor(0, 4);
  split->setStretchFactor(1, 1);
  split->setSizes({1100, 380});
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(split);

  // Writers: every view that can pick an allocation.
  for (TimelineView* view : {active_, segments_}) {
    connect(view, &TimelineView::intervalClicked, this, [this, view](quint32 interval) {
      if (view == active_) return selection_->selectInterval(interval);
      // A segment: select the segment itself (its stack is where it was reserved).
      const auto& iv = view->timeline()->intervals()[interval];
      selection_->selectBlock(iv.address, iv.size, iv.stack, iv.begin_entry);
    });
    connect(view, &TimelineView::entryClicked, selection_, &SnapshotSelection::selectEntry);
    connect(view, &TimelineView::rangeChanged, selection_, &SnapshotSelection::setRange);
  }
  connect(state_->view(), &AllocatorStateView::blockClicked, this,
          [this](quint64 address, quint64 size, quint32 stack, quint32 entry) { selection_->selectBlock(address, size, stack, entry); });
  connect(trace_table_, &RecordTablePage::recordActivated, selection_, &SnapshotSelection::selectEntry);
  connect(block_table_, &RecordTablePage::recordActivated, this, [this](quint32 record) {
    const auto& b = loaded_->snapshot->blocks[record];
    selection_->selectBlock(b.address, b.size, b.stack);
  });
  connect(segment_table_, &RecordTablePage::recordActivated, this, [this](quint32 record) {
    const auto& s = loaded_->snapshot->segments[record];
    selection_->selectBlock(s.address, s.total_size, s.stack);
  });
  // Readers.
  connect(selection_, &SnapshotSelection::selectionChanged, this, &SnapshotPage::showSelection);
  connect(selection_, &SnapshotSelection::rangeChanged, this, [this](qint64 t0, qint64 t1) {
    active_->setRange(t0, t1);  // one zoom for both timelines (setRange emits only on change)
    segments_->setRange(t0, t1);
  });
  connect(axis_, qOverload<int>(&QComboBox::activated), this,
          [this] { setAxis(static_cast<SnapshotSelection::Axis>(axis_->currentData().toInt())); });
  connect(compare_button, &QPushButton::clicked, this, &SnapshotPage::compareRequested);
  connect(group_by_, qOverload<int>(&QComboBox::activated), this, [this] { updateComparison(); });
}

SnapshotPage::~SnapshotPage() = default;

void SnapshotPage::setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded, const QString& path) {
  loaded_ = std::move(loaded);
  path_ = path;
  order_ = {};
  selection_->setSnapshot(loaded_);
  axis_->setCurrentIndex(0);
  selection_->setAxis(SnapshotSelection::Axis::time);
  active_->setTimeline(loaded_, loaded_->allocations, tr("Active memory (allocated + pending free), device %1").arg(loaded_->device));
  segments_->setTimeline(loaded_, loaded_->segments, tr("Cached segments (reserved), device %1").arg(loaded_->device));
  segments_->setRange(active_->rangeBegin(), active_->rangeEnd());
  state_->setSnapshot(loaded_);
  segment_table_->setSnapshot(loaded_);
  block_table_->setSnapshot(loaded_);
  trace_table_->setSnapshot(loaded_);
  figures_->setFigures(loaded_->figures);
  stack_->clear();
  if (compared_) updateComparison();
}

void SnapshotPage::focusView() {
  if (QWidget* w = tabs_->currentWidget()) {
    if (auto* page = qobject_cast<AllocatorStatePage*>(w)) page->view()->setFocus();
    else w->setFocus();
  }
}

void SnapshotPage::setAxis(SnapshotSelection::Axis axis) {
  if (!loaded_) return;
  selection_->setAxis(axis);
  if (axis == SnapshotSelection::Axis::event_order && !order_.allocations) order_ = build_event_order_timelines(*loaded_);
  const bool order = axis == SnapshotSelection::Axis::event_order;
  active_->setAxis(axis, order ? order_.allocations : loaded_->allocations);
  segments_->setAxis(axis, order ? order_.segments : loaded_->segments);
  axis_->setCurrentIndex(order ? 1 : 0);
}

void SnapshotPage::showSelection(const MemorySelection& s) {
  if (syncing_ || !loaded_) return;
  syncing_ = true;
  active_->setSelection(s);
  segments_->setSelection(s);
  if (!s.valid) {
    stack_->clear();
    state_->view()->setSelectedAddress(0);
    syncing_ = false;
    return;
  }
  const auto& snap = *loaded_->snapshot;
  QString what = tr("%1 at %2").arg(formatBytes(s.size), formatAddress(s.address));
  if (s.entry != UINT32_MAX) {
    const auto action = analysis::action_name(snap.trace[s.entry].action);
    what += tr(", %1 by trace entry %2").arg(QString::fromUtf8(action.data(), qsizetype(action.size()))).arg(s.entry);
    if (snap.trace[s.entry].action == analysis::Action::oom) {
      for (const auto& [index, free] : snap.oom_device_free)
        if (index == s.entry) what = tr("OUT OF MEMORY at trace entry %1: asked %2, %3 free on the device").arg(s.entry).arg(formatBytes(s.size), formatBytes(free));
    }
  } else {
    what += tr(", allocated before the trace");
  }
  if (s.end_entry != UINT32_MAX) what += tr(", freed by entry %1").arg(s.end_entry);
  stack_->setStack(loaded_, s.stack, what);
  state_->showSelection(s.address, s.entry);
  if (s.entry != UINT32_MAX) trace_table_->selectRecord(s.entry);
  block_table_->selectAddress(s.address);
  segment_table_->selectAddress(s.address);
  syncing_ = false;
}

void SnapshotPage::setComparison(std::shared_ptr<const LoadedSnapshot> other, const QString& other_path) {
  compared_ = std::move(other);
  compared_path_ = other_path;
  updateComparison();
  tabs_->setCurrentIndex(tabs_->count() - 1);
}

void SnapshotPage::updateComparison() {
  if (!loaded_ || !compared_) return;
  const auto group = static_cast<analysis::GroupBy>(group_by_->currentData().toInt());
  compare_->compare(*loaded_, *compared_, group);
  const auto& c = compare_->comparison();
  compare_label_->setText(tr("A = %1 (%2 live)   B = %3 (%4 live)   growth %5")
                              .arg(QFileInfo(path_).fileName(), formatBytes(c.total_a), QFileInfo(compared_path_).fileName(),
                                   formatBytes(c.total_b))
                              .arg((c.total_b >= c.total_a ? "+" : "-") +
                                   formatBytes(c.total_b >= c.total_a ? c.total_b - c.total_a : c.total_a - c.total_b)));
  emit comparisonShown();
}

}  // namespace cudascope::gui
