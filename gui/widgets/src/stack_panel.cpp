#include <cudascope/gui/stack_panel.h>

#include <cudascope/gui/stack_model.h>

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QHBoxLayout>
#include <QLabel>
#include <QListView>
#include <QPushButton>
#include <QShortcut>
#include <QStyledItemDelegate>
#include <QVBoxLayout>

namespace cudascope::gui {
namespace {

// User frames (StackModel's Qt::UserRole) in bold, folded runs dimmed and italic.
class FrameDelegate : public QStyledItemDelegate {
 public:
  using QStyledItemDelegate::QStyledItemDelegate;

 protected:
  void initStyleOption(QStyleOptionViewItem* option, const QModelIndex& index) const override {
    QStyledItemDelegate::initStyleOption(option, index);
    if (index.data(Qt::UserRole).toBool()) option->font.setBold(true);
    if (index.data(StackModel::FoldRole).toInt() > 0) {
      option->font.setItalic(true);
      option->palette.setColor(QPalette::Text, option->palette.color(QPalette::PlaceholderText));
    }
  }
};

}  // namespace

StackPanel::StackPanel(QWidget* parent) : QWidget(parent) {
  model_ = new StackModel(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  heading_ = new QLabel(tr("Click an allocation (timeline, allocator state, table) to pin its stack here."));
  heading_->setWordWrap(true);
  heading_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  list_ = new QListView;
  list_->setModel(model_);
  list_->setItemDelegate(new FrameDelegate(list_));
  list_->setUniformItemSizes(true);
  list_->setWordWrap(false);
  list_->setTextElideMode(Qt::ElideMiddle);
  list_->setSelectionMode(QAbstractItemView::SingleSelection);
  auto* bar = new QHBoxLayout;
  full_names_ = new QCheckBox(tr("full names"));
  full_names_->setToolTip(tr("C++ names with return type, template arguments and parameters"));
  show_hidden_ = new QCheckBox(tr("allocator frames"));
  show_hidden_->setToolTip(tr("show the allocator's and unwinder's own frames"));
  copy_ = new QPushButton(tr("Copy"));
  copy_->setToolTip(tr("the whole stack, full names, to the clipboard (Ctrl+C)"));
  bar->addWidget(full_names_);
  bar->addWidget(show_hidden_);
  bar->addStretch(1);
  bar->addWidget(copy_);
  layout->addWidget(heading_);
  layout->addWidget(list_, 1);
  layout->addLayout(bar);
  connect(full_names_, &QCheckBox::toggled, model_, &StackModel::setFullNames);
  connect(show_hidden_, &QCheckBox::toggled, this, [this](bool on) {
    model_->setShowHidden(on);
    updateHeading();
    revealUserFrame();
  });
  connect(copy_, &QPushButton::clicked, this, &StackPanel::copy);
  auto* copy_key = new QShortcut(QKeySequence::Copy, list_, nullptr, nullptr, Qt::WidgetShortcut);
  connect(copy_key, &QShortcut::activated, this, &StackPanel::copy);
  connect(list_, &QListView::doubleClicked, this, [this](const QModelIndex& index) {
    if (index.data(StackModel::FoldRole).toInt() > 0) model_->setExpanded(index.row(), true);
  });
}

void StackPanel::setStack(std::shared_ptr<const LoadedSnapshot> loaded, analysis::StackId stack, const QString& what) {
  what_ = what;
  model_->setStack(std::move(loaded), stack);
  updateHeading();
  revealUserFrame();
}

void StackPanel::clear() {
  what_.clear();
  model_->clear();
  heading_->setText(tr("Click an allocation (timeline, allocator state, table) to pin its stack here."));
}

void StackPanel::updateHeading() {
  if (!model_->hasStack()) return;
  QString text = "<b>" + what_.toHtmlEscaped() + "</b>";
  const int user = model_->userRow();
  if (user >= 0) text += "<br>" + tr("allocated at <b>%1</b>").arg(model_->index(user).data().toString().toHtmlEscaped());
  else if (model_->rowCount() == 0) text += "<br>" + tr("no frames recorded (or only the allocator's own)");
  if (model_->hiddenCount() > 0) text += "<br><i>" + tr("%1 allocator and unwinder frames hidden").arg(model_->hiddenCount()) + "</i>";
  heading_->setText(text);
}

void StackPanel::revealUserFrame() {
  const int user = model_->userRow();
  if (user < 0) return;
  list_->setCurrentIndex(model_->index(user));
  list_->scrollTo(model_->index(user), QAbstractItemView::PositionAtCenter);
}

QString StackPanel::copy() {
  const QString text = (what_.isEmpty() ? QString() : what_ + "\n") + model_->copyText();
  if (auto* clipboard = QApplication::clipboard()) clipboard->setText(text);
  return text;
}

}  // namespace cudascope::gui
