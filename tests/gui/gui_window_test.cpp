// The real viewer window on an X server (Xvfb under ctest): opens the H200 fixture, shows
// each view, saves screenshots as test artifacts and checks they hold drawn content.
#include "main_window.h"

#include <cudascope/gui/allocator_state_page.h>
#include <cudascope/gui/allocator_state_view.h>
#include <cudascope/gui/record_table_model.h>
#include <cudascope/gui/record_table_page.h>
#include <cudascope/gui/trace_table_model.h>
#include <cudascope/gui/timeline_view.h>
#include <cudascope/analysis/stacked_timeline.h>

#include <QApplication>
#include <QDir>
#include <QEventLoop>
#include <QHeaderView>
#include <QLineEdit>
#include <QScreen>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTimer>

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

namespace cudascope::gui {
namespace {

std::string data_path(const char* name) { return std::string(CUDASCOPE_TEST_DATA) + "/" + name; }

// Whether $DISPLAY names a local X server that accepts connections; else why not.
std::string display_problem() {
  const char* display = std::getenv("DISPLAY");
  if (!display || !*display) return "DISPLAY is not set (run under xvfb-run)";
  const std::string d(display);
  if (d.front() != ':') return {};  // a remote display: let Qt try
  const std::string number = d.substr(1, d.find('.') - 1);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = "/tmp/.X11-unix/X" + number;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  const bool ok = fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (fd >= 0) close(fd);
  return ok ? std::string() : "no X server accepts connections on " + path;
}

bool wait_for(QObject* sender, const char* signal, int ms = 60000) {
  QSignalSpy spy(sender, signal);
  return spy.wait(ms) || spy.count() > 0;
}

struct Content {
  size_t colours = 0;
  double drawn_fraction = 0;  // pixels differing from the most common colour
};

Content content(const QImage& image, QRect region) {
  std::map<QRgb, size_t> counts;
  region = region.intersected(image.rect());
  for (int y = region.top(); y <= region.bottom(); ++y)
    for (int x = region.left(); x <= region.right(); ++x) ++counts[image.pixel(x, y) | 0xff000000u];
  size_t most = 0, total = 0;
  for (auto& [c, n] : counts) most = std::max(most, n), total += n;
  return {counts.size(), total ? 1.0 - double(most) / double(total) : 0.0};
}

QImage screenshot(MainWindow& w, const QString& name) {
  QApplication::processEvents();
  QTest::qWait(150);
  QApplication::processEvents();
  // From the X server itself: what a user would see.
  QImage image = w.screen()->grabWindow(w.winId()).toImage().convertToFormat(QImage::Format_RGB32);
  QDir().mkpath(CUDASCOPE_ARTIFACTS);
  const QString path = QString(CUDASCOPE_ARTIFACTS) + "/viewer_" + name + ".png";
  EXPECT_TRUE(image.save(path)) << path.toStdString();
  std::printf("screenshot: %s (%dx%d)\n", path.toUtf8().constData(), image.width(), image.height());
  return image;
}

TEST(GuiWindowTest, ViewsOfTheFixtureAreDrawn) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  qputenv("QT_QPA_PLATFORM", "xcb");
  qputenv("CUDASCOPE_VIEWER_NO_DIALOGS", "1");
  int argc = 1;
  char arg0[] = "gui_window_test";
  char* argv[] = {arg0, nullptr};
  QApplication app(argc, argv);
  MainWindow w;
  w.resize(1400, 860);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.openFile(QString::fromStdString(data_path("snap_transformer_p4.pickle.gz")));
  ASSERT_TRUE(wait_for(&w, SIGNAL(snapshotShown()))) << w.lastError().toStdString();

  // Active memory timeline, full zoom-out.
  w.tabs()->setCurrentIndex(0);
  auto* timeline = qobject_cast<TimelineView*>(w.tabs()->widget(0));
  ASSERT_NE(timeline, nullptr);
  QImage shot = screenshot(w, "active_memory");
  const QRect plot(timeline->mapTo(&w, timeline->plotRect().topLeft()), timeline->plotRect().size());
  const Content c = content(shot, plot);
  EXPECT_GT(c.colours, 12u) << "the timeline should show many allocations in distinct colours";
  EXPECT_GT(c.drawn_fraction, 0.05);  // the fixture idles for most of its 4.4 s, then trains
  // Hover text names size, address and stack.
  const QString hover = timeline->describe(QPoint(timeline->plotRect().width() * 3 / 4, timeline->plotRect().height() - 3),
                                           timeline->plotRect().size());
  EXPECT_TRUE(hover.contains("address 0x") || hover.contains("merged")) << hover.toStdString();

  // Loading has ended: the status bar says what was loaded, not that it is loading.
  EXPECT_FALSE(w.statusText().contains("Loading")) << w.statusText().toStdString();
  // Every time-axis label lies wholly inside the view (the last one used to be cut off).
  const auto labels = timeline->timeAxisLabels();
  ASSERT_GE(labels.size(), 3u);
  for (const auto& label : labels) {
    EXPECT_TRUE(timeline->rect().contains(label.rect)) << label.text.toStdString();
    EXPECT_GE(label.rect.width(), timeline->fontMetrics().horizontalAdvance(label.text)) << label.text.toStdString();
  }

  // Zoom in with the keyboard: the range narrows and the view still draws.
  const int64_t span = timeline->rangeEnd() - timeline->rangeBegin();
  timeline->setFocus();
  for (int i = 0; i < 4; ++i) QTest::keyClick(timeline, Qt::Key_Plus);
  EXPECT_LT(timeline->rangeEnd() - timeline->rangeBegin(), span / 4);
  shot = screenshot(w, "active_memory_zoomed");
  EXPECT_GT(content(shot, plot).colours, 4u);
  QTest::keyClick(timeline, Qt::Key_Home);

  // Cached segments.
  w.tabs()->setCurrentIndex(1);
  auto* segments = qobject_cast<TimelineView*>(w.tabs()->widget(1));
  shot = screenshot(w, "cached_segments");
  const QRect seg_plot(segments->mapTo(&w, segments->plotRect().topLeft()), segments->plotRect().size());
  EXPECT_GT(content(shot, seg_plot).colours, 12u);

  // Allocator state at the end, then mid-trace via the slider's page API.
  w.tabs()->setCurrentIndex(2);
  auto* state_page = qobject_cast<AllocatorStatePage*>(w.tabs()->widget(2));
  shot = screenshot(w, "allocator_state_end");
  auto count_colour = [&](const QImage& img, QRgb colour) {
    size_t n = 0;
    for (int y = 0; y < img.height(); ++y)
      for (int x = 0; x < img.width(); ++x) n += (img.pixel(x, y) | 0xff000000u) == colour;
    return n;
  };
  EXPECT_GT(count_colour(shot, AllocatorStateView::kAllocated), 1000u);
  EXPECT_GT(count_colour(shot, AllocatorStateView::kInactive), 1000u);
  state_page->showEntry(6629);
  shot = screenshot(w, "allocator_state_mid");
  EXPECT_EQ(state_page->view()->state().active_bytes, 157684740u);  // Python's figure after entry 6629

  // Trace table: addresses and actions are never cut; the frame filter applies as you type
  // and matches the "file:line" the Frame column shows.
  w.tabs()->setCurrentIndex(5);
  auto* trace_page = qobject_cast<RecordTablePage*>(w.tabs()->widget(5));
  ASSERT_NE(trace_page, nullptr);
  QApplication::processEvents();
  auto* table = trace_page->table();
  const QFontMetrics table_metrics(table->font());
  for (int column : {int(TraceTableModel::Address), int(TraceTableModel::Action), int(TraceTableModel::Stream)})
    for (int row = 0; row < 50; ++row) {
      const QString text = trace_page->model()->index(row, column).data().toString();
      ASSERT_GE(table->horizontalHeader()->sectionSize(column), table_metrics.horizontalAdvance(text) + 6)
          << text.toStdString() << " is cut in column " << column;
    }
  const int all_rows = trace_page->model()->rowCount();
  trace_page->frameFilter()->setFocus();
  QTest::keyClicks(trace_page->frameFilter(), "train_transformer.py:37");
  QTest::qWait(600);  // no Enter: the filter applies once typing pauses
  const int filtered = trace_page->model()->rowCount();
  EXPECT_GT(filtered, 0);
  EXPECT_LT(filtered, all_rows);
  for (int row = 0; row < filtered; row += 7)
    ASSERT_TRUE(trace_page->model()->index(row, 0).data(Qt::ToolTipRole).toString().contains("train_transformer.py:37"));
  shot = screenshot(w, "trace_table_filtered");
  EXPECT_GT(content(shot, shot.rect()).colours, 3u);
  trace_page->frameFilter()->clear();
  QTest::keyClick(trace_page->frameFilter(), Qt::Key_Return);
  EXPECT_EQ(trace_page->model()->rowCount(), all_rows);
  table->selectRow(3);
  shot = screenshot(w, "trace_table");
  w.compareWith(QString::fromStdString(data_path("snap_small_p5.pickle")));
  ASSERT_TRUE(wait_for(&w, SIGNAL(comparisonShown()))) << w.lastError().toStdString();
  shot = screenshot(w, "compare");
  EXPECT_EQ(w.tabs()->currentIndex(), w.tabs()->count() - 1);
  EXPECT_FALSE(w.statusText().contains("Loading")) << w.statusText().toStdString();
}

}  // namespace
}  // namespace cudascope::gui
