// cudascope-viewer [FILE...] [--compare FILE2] [--screenshot FILE.png [--select TEXT [--match N]]]:
// the desktop viewer for allocator snapshots and traces (each trace in its own tab; a trace
// still being written is followed; traces of several ranks, given together, as one timeline
// with a group per rank: rank_timeline.h); --screenshot saves the window once the files are
// shown and quits (screenshot_run.h).
#include "main_window.h"
#include "screenshot_run.h"

#include <QApplication>
#include <QCommandLineParser>

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace {

bool has_display() { return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"); }

// Whether the command line asks only for what needs no screen: the help, or a screenshot.
bool needs_no_screen(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strcmp(arg, "-h") == 0 || std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "--help-all") == 0 ||
        std::strncmp(arg, "--screenshot", 12) == 0)
      return true;
  }
  return false;
}

// Qt aborts when its platform cannot start, as X11's does without a display. With no display
// and no platform asked for, the help and --screenshot run on Qt's offscreen platform, which
// draws the window as a screen would; a window to work in cannot, and the viewer says why
// instead of aborting. False then.
bool choose_platform(int argc, char** argv) {
  if (!qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") || has_display()) return true;
  if (needs_no_screen(argc, argv)) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
    return true;
  }
  std::fprintf(stderr,
               "cudascope-viewer: no display to open a window on (DISPLAY and WAYLAND_DISPLAY are unset): run it in a "
               "desktop session, over ssh -X, or under xvfb-run; --screenshot FILE.png needs no display\n");
  return false;
}

// --screenshot: a run that saves the window once the files are shown, and the application's
// end with its outcome.
void screenshot_then_quit(cudascope::gui::MainWindow& window, cudascope::gui::ScreenshotOptions options) {
  qputenv("CUDASCOPE_VIEWER_NO_DIALOGS", "1");  // an error must end the run, not wait on a dialog
  auto* run = new cudascope::gui::ScreenshotRun(&window, std::move(options));
  // Queued: a file that cannot be opened fails before the event loop runs.
  QObject::connect(
      run, &cudascope::gui::ScreenshotRun::finished, qApp,
      [](int code, const QString& message) {
        if (code == 0) std::printf("screenshot: %s\n", qUtf8Printable(message));
        else std::fprintf(stderr, "cudascope-viewer: %s\n", qUtf8Printable(message));
        QCoreApplication::exit(code);
      },
      Qt::QueuedConnection);
}

}  // namespace

int main(int argc, char** argv) {
  if (!choose_platform(argc, argv)) return 1;
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
  QCommandLineOption screenshot("screenshot",
                                "once the files are shown, save the window as a PNG and quit (exit 1 if a file cannot be "
                                "opened or --select finds nothing); without a display, drawn offscreen",
                                "FILE.png");
  QCommandLineOption select("select",
                            "with --screenshot: select the first event in time whose name contains TEXT, as the search box "
                            "does (zoomed to, its details shown)",
                            "TEXT");
  QCommandLineOption match("match", "with --select: the N-th such event instead of the first", "N", "1");
  parser.addOptions({screenshot, select, match});
  parser.process(app);
  const QStringList files = parser.positionalArguments();
  if (parser.isSet(screenshot) && files.isEmpty()) {
    std::fprintf(stderr, "cudascope-viewer: --screenshot needs files to show\n");
    return 2;
  }
  if ((parser.isSet(select) || parser.isSet(match)) && !parser.isSet(screenshot)) {
    std::fprintf(stderr, "cudascope-viewer: --select and --match need --screenshot\n");
    return 2;
  }
  if (parser.isSet(match) && !parser.isSet(select)) {
    std::fprintf(stderr, "cudascope-viewer: --match needs --select\n");
    return 2;
  }
  bool is_number = false;
  const int nth = parser.value(match).toInt(&is_number);
  if (!is_number || nth < 1) {
    std::fprintf(stderr, "cudascope-viewer: --match %s: not a whole number from 1\n", qUtf8Printable(parser.value(match)));
    return 2;
  }

  cudascope::gui::MainWindow window;
  if (parser.isSet(screenshot)) screenshot_then_quit(window, {parser.value(screenshot), parser.value(select), nth});
  window.show();
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
