#include <cudascope/gui/allocator_state_page.h>

#include <cudascope/gui/allocator_state_view.h>
#include <cudascope/gui/allocator_states.h>

#include <QHBoxLayout>
#include <QLabel>
#include <QScrollArea>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>

namespace cudascope::gui {

AllocatorStatePage::AllocatorStatePage(QWidget* parent) : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  auto* controls = new QHBoxLayout;
  slider_ = new QSlider(Qt::Horizontal);
  spin_ = new QSpinBox;
  entry_label_ = new QLabel;
  controls->addWidget(new QLabel(tr("After trace entry")));
  controls->addWidget(slider_, 1);
  controls->addWidget(spin_);
  layout->addLayout(controls);
  layout->addWidget(entry_label_);
  view_ = new AllocatorStateView;
  scroll_ = new QScrollArea;
  scroll_->setWidget(view_);
  scroll_->setWidgetResizable(true);
  layout->addWidget(scroll_, 1);
  connect(slider_, &QSlider::valueChanged, this, [this](int v) { showEntry(v); });
  connect(spin_, qOverload<int>(&QSpinBox::valueChanged), this, [this](int v) { showEntry(v); });
}

AllocatorStatePage::~AllocatorStatePage() = default;

int64_t AllocatorStatePage::entry() const { return view_->state().entry; }

void AllocatorStatePage::showSelection(uint64_t address, uint32_t entry) {
  if (!states_) return;
  if (entry != UINT32_MAX && states_->hasEntry(entry)) showEntry(entry);
  view_->setSelectedAddress(address);
  const QRect r = view_->selectedRect();
  if (!r.isEmpty()) scroll_->ensureVisible(r.center().x(), r.center().y(), 50, 60);
}

void AllocatorStatePage::setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded) {
  loaded_ = std::move(loaded);
  states_ = std::make_unique<AllocatorStates>(loaded_);
  const int lo = int(states_->firstEntry()) - 1, hi = int(states_->lastEntry());
  for (auto* w : {static_cast<QWidget*>(slider_), static_cast<QWidget*>(spin_)}) w->setEnabled(hi > lo);
  {
    QSignalBlocker a(slider_), b(spin_);
    slider_->setRange(lo, hi);
    spin_->setRange(lo, hi);
  }
  showEntry(hi);
}

void AllocatorStatePage::showEntry(int64_t entry) {
  if (!states_) return;
  auto state = states_->stateAfter(entry);
  {
    QSignalBlocker a(slider_), b(spin_);
    slider_->setValue(int(state.entry));
    spin_->setValue(int(state.entry));
  }
  entry_label_->setText(states_->describe(state));
  const bool final_state = states_->isFinal(state);
  view_->setState(loaded_, std::move(state), final_state);
}

}  // namespace cudascope::gui
