#include <cudascope/gui/allocator_state_page.h>

#include <cudascope/gui/allocator_state_view.h>
#include <cudascope/gui/record_table_model.h>
#include <cudascope/analysis/allocator_replay.h>

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
  if (!replay_) return;
  if (entry != UINT32_MAX && entry >= replay_->first_entry() && entry < replay_->end_entry()) showEntry(entry);
  view_->setSelectedAddress(address);
  const QRect r = view_->selectedRect();
  if (!r.isEmpty()) scroll_->ensureVisible(r.center().x(), r.center().y(), 50, 60);
}

void AllocatorStatePage::setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded) {
  loaded_ = std::move(loaded);
  replay_ = std::make_unique<analysis::AllocatorReplay>(*loaded_->snapshot, loaded_->device);
  const int lo = int(replay_->first_entry()) - 1, hi = int(replay_->end_entry()) - 1;
  for (auto* w : {static_cast<QWidget*>(slider_), static_cast<QWidget*>(spin_)}) w->setEnabled(hi > lo);
  {
    QSignalBlocker a(slider_), b(spin_);
    slider_->setRange(lo, hi);
    spin_->setRange(lo, hi);
  }
  showEntry(hi);
}

void AllocatorStatePage::showEntry(int64_t entry) {
  if (!replay_) return;
  auto state = replay_->state_after(entry);
  {
    QSignalBlocker a(slider_), b(spin_);
    slider_->setValue(int(state.entry));
    spin_->setValue(int(state.entry));
  }
  const auto& snap = *loaded_->snapshot;
  QString text;
  if (state.entry < int64_t(replay_->first_entry())) {
    text = tr("Before the first trace entry");
  } else {
    const auto& e = snap.trace[size_t(state.entry)];
    const auto action = analysis::action_name(e.action);
    text = tr("%1  %2  %3 at %4 ms   (replayed %5 entries from the nearest checkpoint; checkpoints every %6)")
               .arg(QString::fromUtf8(action.data(), int(action.size())), formatAddress(e.addr), formatBytes(e.size))
               .arg(double(e.time_us - snap.trace[replay_->first_entry()].time_us) / 1000.0, 0, 'f', 3)
               .arg(replay_->last_steps())
               .arg(replay_->spacing());
  }
  entry_label_->setText(text);
  const bool final_state = state.entry == int64_t(replay_->end_entry()) - 1;
  view_->setState(loaded_, std::move(state), final_state);
}

}  // namespace cudascope::gui
