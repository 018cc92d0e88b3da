// cudascope-viewer [FILE] [--compare FILE2]: the desktop viewer for allocator snapshots.
#include "main_window.h"

#include <QApplication>
#include <QCommandLineParser>

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName("cudascope-viewer");
  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Views CUDA caching-allocator snapshots: PyTorch pickles (protocols 2-5) and cudascope JSON, plain or gzip.");
  parser.addHelpOption();
  parser.addPositionalArgument("FILE", "snapshot to open");
  QCommandLineOption compare("compare", "a second snapshot to compare against FILE", "FILE2");
  parser.addOption(compare);
  parser.process(app);

  cudascope::gui::MainWindow window;
  window.show();
  const QStringList files = parser.positionalArguments();
  if (!files.isEmpty()) {
    window.openFile(files.front());
    if (parser.isSet(compare)) {
      const QString other = parser.value(compare);
      QObject::connect(&window, &cudascope::gui::MainWindow::snapshotShown, &window,
                       [&window, other] { window.compareWith(other); }, Qt::SingleShotConnection);
    }
  }
  return app.exec();
}
