#pragma once
// `cudascope-viewer --screenshot FILE.png [--select TEXT [--match N]] FILE...`: the viewer opens
// the files as usual (rank traces given together as one timeline), and once the first trace
// (or snapshot) is shown, selects the N-th event in time whose name contains TEXT - as the
// search box's Enter would: selected, zoomed to, its details below (for a collective's kernel
// on a rank timeline, the row saying how it is paired across ranks) - saves the window as a
// PNG and quits. The same picture of the same files every time, for documentation and for
// checking traces by eye; without a display, under Xvfb (docs/gui.md).
//
// Lives on the UI thread; owned by the window it watches.

#include <QObject>
#include <QString>

namespace cudascope::gui {

class MainWindow;
class TracePage;

struct ScreenshotOptions {
  QString path;    // the PNG to write
  QString select;  // a name's part; empty: select nothing
  int match = 1;   // which match, from 1, in time order
};

class ScreenshotRun : public QObject {
  Q_OBJECT
 public:
  // Watches `window`: create it before the files are opened.
  ScreenshotRun(MainWindow* window, ScreenshotOptions options);

 signals:
  // Once: 0 with the file written, else 1 with why not (a file that could not be opened, no
  // event named so, the PNG not writable).
  void finished(int code, const QString& message);

 private:
  void shoot(TracePage* page);
  void saveWhenDrawn();
  void finish(int code, const QString& message);

  MainWindow* window_;
  ScreenshotOptions options_;
  bool done_ = false;
};

}  // namespace cudascope::gui
