#include <cudascope/gui/record_table_page.h>

#include "cell_copy.h"

#include <cudascope/gui/block_table_model.h>
#include <cudascope/gui/segment_table_model.h>
#include <cudascope/gui/stack_model.h>
#include <cudascope/gui/trace_table_model.h>
#include <cudascope/util/byte_format.h>

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QListView>
#include <QPushButton>
#include <QSplitter>
#include <QStyledItemDelegate>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace cudascope::gui {
namespace {

// The stack list draws the user frame (StackModel's Qt::UserRole) in bold.
class UserFrameDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;

 protected:
  void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override {
    QStyledItemDelegate::initStyleOption(option, index);
    if (index.data(Qt::UserRole).toBool()) option->font.setBold(true);
  }
};

}  // namespace

bool parseBytes(const QString& text, uint64_t& out) {
  // The one byte-size parser; people type "1.5 MiB" with a space, the parser takes none.
  QString compact = text.simplified();
  compact.remove(QLatin1Char(' '));
  return cudascope::util::parse_byte_size(compact.toStdString(), out);
}

RecordTablePage::RecordTablePage(Kind kind, QWidget* parent) : QWidget(parent), kind_(kind) {
  switch (kind) {
    case Kind::segments: model_ = new SegmentTableModel(this); break;
    case Kind::blocks: model_ = new BlockTableModel(this); break;
    case Kind::trace: model_ = new TraceTableModel(this); break;
  }
  stack_ = new StackModel(this);
  auto* layout = new QVBoxLayout(this);
  auto* bar = new QHBoxLayout;
  min_size_ = new QLineEdit;
  max_size_ = new QLineEdit;
  min_size_->setPlaceholderText(tr("min size, e.g. 1MiB"));
  max_size_->setPlaceholderText(tr("max size"));
  stream_ = new QComboBox;
  action_ = new QComboBox;
  frame_ = new QLineEdit;
  frame_->setPlaceholderText(tr("frame filter: name or file:line"));
  frame_->setClearButtonEnabled(true);
  search_ = new QLineEdit;
  search_->setPlaceholderText(tr("find address 0x... or frame text"));
  auto* find = new QPushButton(tr("Find next"));
  bar->addWidget(min_size_);
  bar->addWidget(max_size_);
  bar->addWidget(stream_);
  bar->addWidget(action_);
  bar->addWidget(frame_, 1);
  bar->addWidget(search_, 1);
  bar->addWidget(find);
  layout->addLayout(bar);
  status_ = new QLabel;
  layout->addWidget(status_);

  auto* split = new QSplitter(Qt::Vertical);
  table_ = new QTableView;
  table_->setModel(model_);
  // File order until a header is clicked (QHeaderView's default indicator would sort the
  // first column descending as soon as sorting is enabled).
  table_->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
  table_->setSortingEnabled(true);
  table_->setWordWrap(false);
  copyWholeCells(table_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::SingleSelection);
  table_->verticalHeader()->setDefaultSectionSize(20);
  table_->horizontalHeader()->setStretchLastSection(true);
  auto* stack_view = stack_view_ = new QListView;
  stack_view->setModel(stack_);
  stack_view->setWordWrap(false);
  copyWholeCells(stack_view);  // a frame uncut, not the prefix its row shows
  stack_view->setItemDelegate(new UserFrameDelegate(stack_view));
  auto* stack_panel = new QWidget;
  auto* stack_layout = new QVBoxLayout(stack_panel);
  stack_layout->setContentsMargins(0, 0, 0, 0);
  auto* stack_bar = new QHBoxLayout;
  stack_label_ = new QLabel(tr("Stack of the selected row (user frame in bold)"));
  auto* show_hidden = new QCheckBox(tr("show allocator and unwinder frames"));
  stack_bar->addWidget(stack_label_, 1);
  stack_bar->addWidget(show_hidden);
  stack_layout->addLayout(stack_bar);
  stack_layout->addWidget(stack_view, 1);
  connect(show_hidden, &QCheckBox::toggled, this, [this](bool on) {
    stack_->setShowHidden(on);
    updateStackLabel();
  });
  split->addWidget(table_);
  split->addWidget(stack_panel);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  layout->addWidget(split, 1);

  for (auto* edit : {min_size_, max_size_}) connect(edit, &QLineEdit::editingFinished, this, &RecordTablePage::applyFilter);
  // The frame filter applies as the user types, once typing pauses (a filter pass over a
  // million rows should not run per keystroke).
  filter_timer_ = new QTimer(this);
  filter_timer_->setSingleShot(true);
  filter_timer_->setInterval(150);
  connect(filter_timer_, &QTimer::timeout, this, &RecordTablePage::applyFilter);
  connect(frame_, &QLineEdit::textEdited, filter_timer_, qOverload<>(&QTimer::start));
  connect(frame_, &QLineEdit::returnPressed, this, &RecordTablePage::applyFilter);
  for (auto* combo : {stream_, action_}) connect(combo, qOverload<int>(&QComboBox::activated), this, &RecordTablePage::applyFilter);
  auto do_find = [this] {
    const QString text = search_->text().trimmed();
    bool ok = false;
    const uint64_t address = text.startsWith("0x", Qt::CaseInsensitive) ? text.mid(2).toULongLong(&ok, 16) : 0;
    const bool found = ok ? findAddress(address) : findFrame(text);
    status_->setText(found ? QString() : tr("'%1' not found after the selected row").arg(text));
  };
  connect(find, &QPushButton::clicked, this, do_find);
  connect(search_, &QLineEdit::returnPressed, this, do_find);
  connect(table_->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
    if (!current.isValid() || !loaded_) stack_->clear();
    else stack_->setStack(loaded_, model_->stackOf(model_->recordAt(current.row())));
    updateStackLabel();
    if (const int user = stack_->userRow(); user >= 0) {  // the frame the Frame column shows, in view
      stack_view_->setCurrentIndex(stack_->index(user));
      stack_view_->scrollTo(stack_->index(user), QAbstractItemView::PositionAtCenter);
    }
    if (current.isValid() && !quiet_) emit recordActivated(model_->recordAt(current.row()));
  });
}

void RecordTablePage::setSnapshot(std::shared_ptr<const LoadedSnapshot> loaded) {
  loaded_ = loaded;
  stream_->clear();
  stream_->addItem(tr("all streams"), -1);
  for (size_t s = 0; s < loaded_->snapshot->streams.size(); ++s)
    stream_->addItem(tr("stream %1").arg(formatAddress(loaded_->snapshot->streams[s])), int(s));
  action_->clear();
  if (kind_ == Kind::trace) {
    action_->addItem(tr("all actions"), -1);
    for (int a = 0; a < analysis::kActionCount; ++a) {
      const auto name = analysis::action_name(static_cast<analysis::Action>(a));
      action_->addItem(QString::fromUtf8(name.data(), int(name.size())), a);
    }
  } else if (kind_ == Kind::blocks) {
    action_->addItem(tr("all states"), -1);
    for (int s = 0; s < 3; ++s) {
      const auto name = analysis::block_state_name(static_cast<analysis::BlockState>(s));
      action_->addItem(QString::fromUtf8(name.data(), int(name.size())), s);
    }
  }
  action_->setVisible(kind_ != Kind::segments);
  stack_->clear();
  updateStackLabel();
  model_->setSnapshot(loaded);
  fitColumns();
  status_->setText(tr("%1 rows").arg(model_->rowCount()));
}

void RecordTablePage::fitColumns() {
  // Every column but the last (the frame, which stretches) as wide as its widest text among
  // the first rows, so addresses and action names are never cut.
  auto* header = table_->horizontalHeader();
  header->setResizeContentsPrecision(2000);
  for (int c = 0; c + 1 < model_->columnCount(); ++c) table_->resizeColumnToContents(c);
}

void RecordTablePage::updateStackLabel() {
  const int hidden = stack_->hiddenCount();
  stack_label_->setText(hidden > 0 ? tr("Stack of the selected row (user frame in bold; %1 allocator and unwinder frames hidden)").arg(hidden)
                                   : tr("Stack of the selected row (user frame in bold)"));
}

void RecordTablePage::applyFilter() {
  if (!loaded_) return;
  RecordFilter f;
  uint64_t v = 0;
  QStringList bad;
  if (!min_size_->text().trimmed().isEmpty()) {
    if (parseBytes(min_size_->text(), v)) f.min_size = v;
    else bad << tr("min size '%1'").arg(min_size_->text());
  }
  if (!max_size_->text().trimmed().isEmpty()) {
    if (parseBytes(max_size_->text(), v)) f.max_size = v;
    else bad << tr("max size '%1'").arg(max_size_->text());
  }
  f.stream = stream_->currentData().isValid() ? stream_->currentData().toInt() : -1;
  f.action = action_->currentData().isValid() ? action_->currentData().toInt() : -1;
  f.frame_text = frame_->text();
  model_->setFilter(f);
  filter_timer_->stop();
  status_->setText(bad.isEmpty() ? tr("%1 rows").arg(model_->rowCount())
                                 : tr("not a size: %1 (use e.g. 4096, 512KiB, 1.5MiB)").arg(bad.join(", ")));
}

void RecordTablePage::selectRow(int row) {
  table_->selectRow(row);
  table_->scrollTo(model_->index(row, 0));
}

bool RecordTablePage::selectRecord(uint32_t record) {
  int row = model_->rowOfRecord(record);
  if (row < 0) return false;
  quiet_ = true;
  selectRow(row);
  quiet_ = false;
  return true;
}

bool RecordTablePage::selectAddress(uint64_t address) {
  const int row = model_->findAddress(address, -1);
  if (row < 0) return false;
  quiet_ = true;
  selectRow(row);
  quiet_ = false;
  return true;
}

bool RecordTablePage::findAddress(uint64_t address) {
  const int from = table_->currentIndex().isValid() ? table_->currentIndex().row() : -1;
  const int row = model_->findAddress(address, from);
  if (row >= 0) selectRow(row);
  return row >= 0;
}

bool RecordTablePage::findFrame(const QString& text) {
  const int from = table_->currentIndex().isValid() ? table_->currentIndex().row() : -1;
  const int row = model_->findFrameText(text, from);
  if (row >= 0) selectRow(row);
  return row >= 0;
}

}  // namespace cudascope::gui
