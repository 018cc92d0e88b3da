#include "cell_copy.h"

#include <cudascope/gui/capped_text.h>

#include <QAbstractItemView>
#include <QClipboard>
#include <QGuiApplication>
#include <QKeyEvent>

namespace cudascope::gui {
namespace {

// Takes the copy key before the view's own keyPressEvent, which would copy DisplayRole.
class WholeCellCopy : public QObject {
 public:
  using QObject::QObject;

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override {
    if (event->type() != QEvent::KeyPress || !static_cast<QKeyEvent*>(event)->matches(QKeySequence::Copy)) return false;
    const QModelIndex index = static_cast<QAbstractItemView*>(watched)->currentIndex();
    if (!index.isValid()) return false;
    QVariant text = index.data(FullTextRole);
    if (!text.isValid()) text = index.data(Qt::DisplayRole);
    if (auto* clipboard = QGuiApplication::clipboard()) clipboard->setText(text.toString());
    return true;
  }
};

}  // namespace

void copyWholeCells(QAbstractItemView* view) { view->installEventFilter(new WholeCellCopy(view)); }

}  // namespace cudascope::gui
