// cudascope-viewer [FILE...] [--compare FILE2]: the desktop viewer for allocator snapshots
// and traces (each trace in its own tab; a trace still being written is followed; traces of
// several ranks, given together, as one timeline with a group per rank: rank_timeline.h).
#include "main_window.h"

#include <QApplication>
#include <QCommandLineParser>

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("cudascope-viewer");
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Views CUDA caching-allocator snapshots (PyTorch pickles, protocols 2-5, and cudascope JSON) and traces "
      "(cudascope run, torch.profiler/Kineto, any Chrome trace-event file), plain or gzip; the kind is read from the "
      "content. A plain trace still being written is shown growing.");
  parser.addHelpOption();
  parser.addPositionalArgument("FILE", "snapshots or traces to open (each trace in a tab)", "[FILE...]");
  QCommandLineOption compare("compare", "a second snapshot to compare against the (snapshot) FILE", "FILE2");
  parser.addOption(compare);
  parser.process(app);

  cudascope::gui::MainWindow window;
  window.show();
  const QStringList files = parser.positionalArguments();
  window.openFiles(files);  // rank traces given together open as one timeline
  if (!files.isEmpty()) {
    if (parser.isSet(compare)) {
      const QString other = parser.value(compare);
      QObject::connect(&window, &cudascope::gui::MainWindow::snapshotShown, &window,
                       [&window, other] { window.compareWith(other); }, Qt::SingleShotConnection);
    }
  }
  return app.exec();
}
