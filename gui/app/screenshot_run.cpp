#include "screenshot_run.h"

#include "main_window.h"

#include <cudascope/gui/trace_page.h>

#include <QLineEdit>
#include <QPixmap>
#include <QTimer>

namespace cudascope::gui {
namespace {

// Long enough for the page's layout, the timeline's first paint and the details' columns.
constexpr int kSettleMs = 500;

}  // namespace

ScreenshotRun::ScreenshotRun(MainWindow* window, ScreenshotOptions options)
    : QObject(window), window_(window), options_(std::move(options)) {
  connect(window, &MainWindow::traceShown, this, &ScreenshotRun::shoot, Qt::SingleShotConnection);
  connect(window, &MainWindow::snapshotShown, this, &ScreenshotRun::saveWhenDrawn, Qt::SingleShotConnection);
  connect(window, &MainWindow::loadFailed, this, [this](const QString& message) { finish(1, message); });
}

void ScreenshotRun::shoot(TracePage* page) {
  // After the page has its size: zooming to the selection needs the view's width.
  QTimer::singleShot(0, this, [this, page] {
    if (!options_.select.isEmpty()) {
      page->searchBox()->setText(options_.select);
      // The search wraps around after its last match: N past the count would select another.
      if (!page->findNext()) return finish(1, tr("no event's name contains \"%1\"").arg(options_.select));
      if (page->matchCount() < std::uint64_t(options_.match)) {
        return finish(1, tr("--match %1: only %2 events' names contain \"%3\"")
                             .arg(options_.match)
                             .arg(page->matchCount())
                             .arg(options_.select));
      }
      for (int i = 1; i < options_.match; ++i) page->findNext();
    }
    saveWhenDrawn();
  });
}

void ScreenshotRun::saveWhenDrawn() {
  QTimer::singleShot(kSettleMs, this, [this] {
    const QPixmap shot = window_->grab();
    if (!shot.save(options_.path, "PNG")) return finish(1, tr("cannot write %1").arg(options_.path));
    finish(0, tr("%1 (%2x%3)").arg(options_.path).arg(shot.width()).arg(shot.height()));
  });
}

void ScreenshotRun::finish(int code, const QString& message) {
  if (done_) return;
  done_ = true;
  emit finished(code, message);
}

}  // namespace cudascope::gui
