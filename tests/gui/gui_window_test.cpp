// The real viewer window on an X server (Xvfb under ctest): opens the H200 fixture, shows
// each view, saves screenshots as test artifacts and checks they hold drawn content.
#include "huge_name_inputs.h"
#include "main_window.h"
#include "nccl_rank_traces.h"
#include "screenshot_run.h"

#include <cudascope/gui/capped_text.h>
#include <cudascope/gui/event_details_model.h>
#include <cudascope/gui/range_summary_model.h>
#include <cudascope/gui/trace_page.h>
#include <cudascope/gui/trace_timeline_view.h>

#include <cudascope/gui/allocator_state_page.h>
#include <cudascope/gui/allocator_state_view.h>
#include <cudascope/gui/record_table_model.h>
#include <cudascope/gui/record_table_page.h>
#include <cudascope/gui/snapshot_page.h>
#include <cudascope/gui/stack_model.h>
#include <cudascope/gui/stack_panel.h>
#include <cudascope/gui/trace_table_model.h>
#include <cudascope/gui/timeline_view.h>
#include <cudascope/analysis/stacked_timeline.h>

#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDateTime>
#include <QFile>
#include <QLabel>
#include <QListView>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QToolTip>
#include <QUrl>
#include <QTemporaryDir>
#include <QDir>
#include <QEventLoop>
#include <QHeaderView>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPainter>
#include <QLineEdit>
#include <QScreen>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QTimer>
#include <QWheelEvent>

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
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

// One application for all tests of the process (Qt allows one at a time).
void ensure_app() {
  if (qApp) return;
  qputenv("QT_QPA_PLATFORM", "xcb");
  qputenv("CUDASCOPE_VIEWER_NO_DIALOGS", "1");
  static int argc = 1;
  static char arg0[] = "gui_window_test";
  static char* argv[] = {arg0, nullptr};
  new QApplication(argc, argv);
}

// Opens `paths` together (a rank set becomes one tab) and waits until `tabs` trace tabs are
// shown; returns how many were.
qsizetype open_traces(MainWindow& w, const QStringList& paths, qsizetype tabs) {
  QSignalSpy shown(&w, SIGNAL(traceShown(cudascope::gui::TracePage*)));
  w.openFiles(paths);
  for (int i = 0; i < 100 && shown.count() < tabs; ++i) shown.wait(300);
  return shown.count();
}

TEST(GuiWindowTest, ViewsOfTheFixtureAreDrawn) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
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
  // Allocated blocks each in their allocation's colour (the Active memory timeline's), not one blue.
  std::set<QRgb> block_colours;
  for (const auto& seg : state_page->view()->state().segments)
    for (const auto& b : seg.blocks)
      if (b.state == analysis::BlockState::active_allocated) block_colours.insert(state_page->view()->blockColour(b));
  EXPECT_GT(block_colours.size(), 20u);
  EXPECT_EQ(block_colours.count(AllocatorStateView::kAllocated), 0u);
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

TEST(GuiWindowTest, TracesOpenInTabsWithKernelsNestingAndFlowsDrawn) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  MainWindow w;
  w.resize(1500, 900);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QSignalSpy shown(&w, SIGNAL(traceShown(cudascope::gui::TracePage*)));
  w.openFile(QString::fromStdString(data_path("kineto_train_h100_s3.json.gz")));
  w.openFile(QString::fromStdString(data_path("trace_golden.json")));
  for (int i = 0; i < 100 && shown.count() < 2; ++i) shown.wait(300);
  ASSERT_EQ(shown.count(), 2) << w.lastError().toStdString();
  const auto pages = w.tracePages();
  ASSERT_EQ(pages.size(), 2);
  TracePage* kineto = pages[0]->document()->path().contains("kineto") ? pages[0] : pages[1];
  TracePage* golden = kineto == pages[0] ? pages[1] : pages[0];
  EXPECT_EQ(w.documents()->count(), 2) << "the empty snapshot tab makes way for the traces";

  // The Kineto trace, all of it: kernels drawn on the GPU stream's row.
  w.documents()->setCurrentWidget(kineto);
  auto* view = kineto->view();
  QImage shot = screenshot(w, "trace_kineto_overview");
  const auto& model = kineto->document()->model();
  size_t kernel_items = 0, merged = 0;
  QRect stream_rows;
  for (const auto& item : view->paintedItems()) {
    const auto& e = model.event(item.item.event);
    if (item.item.merged()) ++merged;
    if (model.cat(e) == "kernel") {
      ++kernel_items;
      stream_rows |= item.rect.toAlignedRect();
    }
  }
  EXPECT_GT(kernel_items, 5u);
  EXPECT_GT(merged, 0u) << "a 387 ms trace in 1200 px merges the microsecond kernels into marked runs";
  const QRect stream_on_window(view->mapTo(&w, stream_rows.topLeft()), stream_rows.size());
  EXPECT_GT(content(shot, stream_on_window).colours, 6u);

  // The wheel zooms at the pointer: the time under it stays put.
  {
    const QRect plot = view->plotRect();
    const QPointF at(plot.left() + plot.width() * 0.25, plot.top() + 40);
    const double before_t = view->rangeBegin() + (view->rangeEnd() - view->rangeBegin()) * 0.25;
    QWheelEvent wheel(at, view->mapToGlobal(at), {}, QPoint(0, 240), Qt::NoButton, {}, Qt::NoScrollPhase, false);
    QApplication::sendEvent(view, &wheel);
    const double after_t = view->rangeBegin() + (view->rangeEnd() - view->rangeBegin()) * 0.25;
    EXPECT_NEAR(after_t, before_t, (view->rangeEnd() - view->rangeBegin()) * 0.01);
    QTest::keyClick(view, Qt::Key_Home);
  }

  // Zoom with W/S and pan with A/D, as in Perfetto.
  view->setFocus();
  const qint64 span = view->rangeEnd() - view->rangeBegin();
  for (int i = 0; i < 3; ++i) QTest::keyClick(view, Qt::Key_W);
  EXPECT_LT(view->rangeEnd() - view->rangeBegin(), span * 6 / 10);
  const qint64 before_pan = view->rangeBegin();
  QTest::keyClick(view, Qt::Key_D);
  EXPECT_GT(view->rangeBegin(), before_pan);
  QTest::keyClick(view, Qt::Key_A);
  QTest::keyClick(view, Qt::Key_S);
  QTest::keyClick(view, Qt::Key_Home);

  // Search: the next cudaLaunchKernel is selected and its details shown.
  kineto->searchBox()->setText("cudaLaunchKernel");
  ASSERT_TRUE(kineto->findNext());
  const quint32 first = view->selectedEvent();
  EXPECT_EQ(model.name(model.event(first)).substr(0, 16), "cudaLaunchKernel");
  ASSERT_TRUE(kineto->findNext());
  EXPECT_GE(model.event(view->selectedEvent()).ts_ns, model.event(first).ts_ns);
  EXPECT_FALSE(kineto->details()->value("Correlation").isEmpty());
  shot = screenshot(w, "trace_kineto_search");

  // A range over everything: the summary counts Python's 102 kernels.
  QSignalSpy summarised(kineto, &TracePage::summaryReady);
  view->setSelectedRange(kineto->document()->index().begin_ns(), kineto->document()->index().end_ns());
  ASSERT_TRUE(summarised.wait(10000)) << "the summary is computed off the UI thread";
  quint64 kernels = 0;
  auto* summary = kineto->summary();
  for (int r = 0; r < summary->rowCount(); ++r)
    if (summary->index(r, RangeSummaryModel::Kind).data().toString() == "kernel")
      kernels += summary->index(r, RangeSummaryModel::Count).data(Qt::UserRole).toULongLong();
  EXPECT_EQ(kernels, 102u);
  view->setSelectedRange(kineto->document()->index().begin_ns() + span / 2, kineto->document()->index().begin_ns() + span * 3 / 4);
  ASSERT_TRUE(summarised.wait(10000));
  shot = screenshot(w, "trace_kineto_range");

  // Our golden trace: the NVTX range "step 0" above the launch nested in it, and the
  // launch's flow arrow to its kernel once the launch is selected.
  w.documents()->setCurrentWidget(golden);
  auto* gview = golden->view();
  QApplication::processEvents();
  const auto& gm = golden->document()->model();
  auto find_item = [&](std::string_view name) -> const TraceTimelineView::PaintedItem* {
    for (const auto& item : gview->paintedItems())
      if (!item.item.merged() && gm.name(gm.event(item.item.event)) == name) return &item;
    return nullptr;
  };
  gview->update();
  QApplication::processEvents();
  const auto* step = find_item("step 0");
  const auto* launch = find_item("cudaLaunchKernel");
  const auto* kernel = find_item("add_kernel(float*, float*, int)");
  ASSERT_TRUE(step && launch && kernel);
  EXPECT_EQ(step->row, launch->row);
  EXPECT_EQ(step->item.depth, 0);
  EXPECT_EQ(launch->item.depth, 1);
  EXPECT_GT(launch->rect.top(), step->rect.bottom() - 1) << "the nested call is drawn under its range";
  EXPECT_GE(launch->rect.left(), step->rect.left());
  EXPECT_LE(launch->rect.right(), step->rect.right());
  // A click on the launch selects it (as a user would).
  QTest::mouseClick(gview, Qt::LeftButton, {}, launch->rect.center().toPoint());
  EXPECT_EQ(gview->selectedEvent(), launch->item.event);
  QApplication::processEvents();
  shot = screenshot(w, "trace_golden_flow");
  ASSERT_EQ(gview->paintedFlows().size(), 1u);
  const auto flow = gview->paintedFlows().front();
  const auto* kernel_now = find_item("add_kernel(float*, float*, int)");
  ASSERT_TRUE(kernel_now);
  EXPECT_NEAR(flow.to.x(), kernel_now->rect.left(), 2.0) << "the arrow ends at the kernel's start";
  EXPECT_NEAR(flow.to.y(), kernel_now->rect.center().y(), 2.0);
  // Pixels: the launch drawn in its name's colour, the arrow in the flow colour near its end.
  const QPoint launch_px = gview->mapTo(&w, launch->rect.center().toPoint() + QPoint(0, 0));
  const QColor want = QColor(TraceTimelineView::nameColour("cudaLaunchKernel"));
  const QColor got = shot.pixelColor(launch_px.x(), launch_px.y() - 4);
  EXPECT_LT(std::abs(got.red() - want.red()) + std::abs(got.green() - want.green()) + std::abs(got.blue() - want.blue()), 30)
      << got.name().toStdString() << " vs " << want.name().toStdString();
  size_t flow_pixels = 0;
  const QPoint to_px = gview->mapTo(&w, flow.to.toPoint());
  for (int dy = -12; dy <= 12; ++dy)
    for (int dx = -6; dx <= 6; ++dx) {
      const QColor c = shot.pixelColor(to_px.x() + dx, to_px.y() + dy);
      flow_pixels += c.red() > 200 && c.green() > 150 && c.blue() < 120;
    }
  EXPECT_GT(flow_pixels, 10u) << "the flow arrow is drawn into the kernel";
  EXPECT_EQ(golden->details()->value("Correlation"), "7");
  EXPECT_TRUE(golden->details()->value("Flow to").startsWith("add_kernel")) << golden->details()->value("Flow to").toStdString();
  gview->selectEvent(kernel_now->item.event);
  EXPECT_EQ(golden->details()->value("Grid"), "[64, 1, 1]");
  EXPECT_EQ(golden->details()->value("Block"), "[256, 1, 1]");
}


// Kernels by name in a page's range summary over the whole trace.
std::map<std::string, quint64> summarised_kernels(TracePage* page) {
  QSignalSpy summarised(page, &TracePage::summaryReady);
  const auto& index = page->document()->index();
  page->view()->setSelectedRange(index.begin_ns(), index.end_ns());
  EXPECT_TRUE(summarised.wait(20000)) << "the summary is computed off the UI thread";
  std::map<std::string, quint64> kernels;
  auto* summary = page->summary();
  for (int r = 0; r < summary->rowCount(); ++r)
    if (summary->index(r, RangeSummaryModel::Kind).data().toString() == "kernel")
      kernels[summary->index(r, RangeSummaryModel::Name).data(Qt::UserRole).toString().toStdString()] +=  // full names
          summary->index(r, RangeSummaryModel::Count).data(Qt::UserRole).toULongLong();
  return kernels;
}

// Kernels by name as Python's json module counted them in the same file (trace_expect.py).
std::map<std::string, quint64> expected_kernels(const char* expect_file) {
  std::ifstream in(data_path(expect_file));
  std::stringstream text;
  text << in.rdbuf();
  const QJsonObject by_name =
      QJsonDocument::fromJson(QByteArray::fromStdString(text.str())).object().value("kernels_by_name").toObject();
  std::map<std::string, quint64> kernels;
  for (auto it = by_name.begin(); it != by_name.end(); ++it) kernels[it.key().toStdString()] = it.value().toInteger();
  return kernels;
}

TEST(GuiWindowTest, OurTraceAndTorchProfilersOfTheSameProgramShowTheSameKernelsSideBySide) {
  // One PyTorch program on an H100, traced by `cudascope run` and by torch.profiler.
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  MainWindow w;
  w.resize(1200, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QSignalSpy shown(&w, SIGNAL(traceShown(cudascope::gui::TracePage*)));
  w.openFile(QString::fromStdString(data_path("train_h100_ours.json.gz")));
  w.openFile(QString::fromStdString(data_path("train_h100_kineto.json.gz")));
  for (int i = 0; i < 100 && shown.count() < 2; ++i) shown.wait(300);
  ASSERT_EQ(shown.count(), 2) << w.lastError().toStdString();
  const auto pages = w.tracePages();
  ASSERT_EQ(pages.size(), 2);
  TracePage* ours = pages[0]->document()->path().contains("ours") ? pages[0] : pages[1];
  TracePage* torch = ours == pages[0] ? pages[1] : pages[0];

  QImage halves[2];
  TracePage* order[2] = {ours, torch};
  const char* expect[2] = {"train_h100_ours.expect.json", "train_h100_kineto.expect.json"};
  std::map<std::string, quint64> kernels[2];
  for (int i = 0; i < 2; ++i) {
    w.documents()->setCurrentWidget(order[i]);
    kernels[i] = summarised_kernels(order[i]);
    EXPECT_EQ(kernels[i], expected_kernels(expect[i])) << expect[i];
    halves[i] = screenshot(w, i == 0 ? "h100_train_ours" : "h100_train_torch_profiler");
    const auto* view = order[i]->view();
    QRect kernel_rows;
    for (const auto& item : view->paintedItems())
      if (order[i]->document()->model().cat(order[i]->document()->model().event(item.item.event)) == "kernel")
        kernel_rows |= item.rect.toAlignedRect();
    ASSERT_FALSE(kernel_rows.isEmpty()) << expect[i];
    EXPECT_GT(content(halves[i], QRect(view->mapTo(&w, kernel_rows.topLeft()), kernel_rows.size())).colours, 6u);
  }
  EXPECT_EQ(kernels[0], kernels[1]) << "the same program's kernels, name by name";
  quint64 total = 0;
  for (const auto& [name, count] : kernels[0]) total += count;
  EXPECT_GT(total, 1000u);

  // Both views in one picture, ours on the left.
  QImage both(halves[0].width() + halves[1].width(), std::max(halves[0].height(), halves[1].height()), QImage::Format_RGB32);
  both.fill(Qt::white);
  QPainter painter(&both);
  painter.drawImage(0, 0, halves[0]);
  painter.drawImage(halves[0].width(), 0, halves[1]);
  painter.end();
  const QString path = QString(CUDASCOPE_ARTIFACTS) + "/viewer_h100_train_side_by_side.png";
  EXPECT_TRUE(both.save(path)) << path.toStdString();
}

// A rank's trace for the two-rank window test: 6 steps of compute kernels then an
// all-reduce that ends at the same moment on every rank (rank 0's clock); the host clock
// of the rank is `shift_ns` ahead and each end wobbles by up to 2 us.
std::string two_rank_trace(int rank, const std::string& host, long long shift_ns) {
  std::ostringstream t;
  auto us = [&](long long ns) { return std::to_string(double(ns + shift_ns) / 1000.0); };
  t << "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":" << rank << ",\"name\":\"H100\"}],"
    << "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":" << rank << ",\"world_size\":2,\"host\":\"" << host
    << "\"},\"traceEvents\":[\n";
  t << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << 3000 + rank << ",\"tid\":0,\"args\":{\"name\":\"python train.py\"}},\n";
  t << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << rank << ",\"tid\":7,\"args\":{\"name\":\"stream 7 compute\"}},\n";
  t << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << rank << ",\"tid\":13,\"args\":{\"name\":\"stream 13 nccl\"}},\n";
  const long long step = 2'000'000;
  for (int s = 0; s < 6; ++s) {
    const long long base = 10'000'000 + s * step;
    t << "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#" << s << "\",\"pid\":" << 3000 + rank
      << ",\"tid\":1,\"ts\":" << us(base) << ",\"dur\":" << double(step - 50'000) / 1000.0 << "},\n";
    for (int k = 0; k < 8; ++k) {
      const long long start = base + 100'000 + k * 150'000 + rank * 20'000;
      t << "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::linear\",\"pid\":" << 3000 + rank << ",\"tid\":1,\"ts\":"
        << us(start - 60'000) << ",\"dur\":40},\n";
      t << "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" << (k % 2 ? "sm90_xmma_gemm_bf16" : "elementwise_kernel") << "\",\"pid\":"
        << rank << ",\"tid\":7,\"ts\":" << us(start) << ",\"dur\":" << (k % 2 ? 120 : 60) << "},\n";
    }
    const long long end = base + 1'800'000 + ((s * 7 + rank * 3) % 5) * 500;  // within 2 us
    const long long start = base + 1'350'000 + rank * 150'000;                 // rank 1 arrives later
    t << "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_bf16_RING_LL\",\"pid\":" << rank
      << ",\"tid\":13,\"ts\":" << us(start) << ",\"dur\":" << double(end - start) / 1000.0
      << ",\"args\":{\"communication\":true,\"collective\":\"AllReduce\"}}" << (s == 5 ? "\n" : ",\n");
  }
  t << "]}\n";
  return t.str();
}

TEST(GuiWindowTest, TwoRankTracesOpenAsOneTimelineWithRankGroups) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  const QString dir = QString(CUDASCOPE_ARTIFACTS) + "/two_ranks";
  QDir().mkpath(dir);
  const QString r0 = dir + "/trace_0.json", r1 = dir + "/trace_1.json";
  std::ofstream(r0.toStdString()) << two_rank_trace(0, "node-a", 0);
  std::ofstream(r1.toStdString()) << two_rank_trace(1, "node-b", 3'200'000);  // its clock is 3.2 ms ahead
  MainWindow w;
  w.resize(1400, 760);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_EQ(open_traces(w, {r0, r1}, 1), 1) << w.lastError().toStdString();
  QTest::qWait(300);
  const auto pages = w.tracePages();
  ASSERT_EQ(pages.size(), 1) << "one tab, one timeline";
  TraceDocument* doc = pages[0]->document();
  ASSERT_TRUE(doc->isRankTimeline());
  const auto& ranks = doc->rankGroups();
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[1].clock, RankGroup::Clock::aligned);
  EXPECT_NEAR(double(ranks[1].alignment.offset_ns), -3'200'000.0, 2'000.0);
  // Rank 1 always arrives 150 us later, so every pair overlaps the same way: the offset lies
  // within the longer part (450 us) of the estimate, give or take the ends' 2 us wobble.
  EXPECT_LE(std::llabs(ranks[1].alignment.offset_ns + 3'200'000), ranks[1].alignment.error_ns);
  EXPECT_LE(ranks[1].alignment.error_ns, 452'000);
  EXPECT_EQ(ranks[1].alignment.collectives, 6);
  EXPECT_TRUE(pages[0]->statusText().contains("rank 1 aligned to rank 0: offset")) << pages[0]->statusText().toStdString();
  EXPECT_EQ(w.documents()->tabText(w.documents()->currentIndex()), "ranks 0-1 (2 traces)");

  // Both ranks' kernels are drawn, and a group header band sits above each rank's rows.
  auto* view = pages[0]->view();
  QImage shot = screenshot(w, "two_ranks");
  std::set<int> ranks_drawn;
  for (const auto& item : view->paintedItems())
    if (doc->model().cat(doc->model().event(item.item.event)) == "kernel") ranks_drawn.insert(doc->rankGroupOfRow(item.row));
  EXPECT_EQ(ranks_drawn, (std::set<int>{0, 1}));
  int headers = 0;
  for (quint32 r = 0; r < doc->index().rows().size(); ++r) {
    if (view->groupHeaderAbove(r) < 0) continue;
    ++headers;
    const int y = view->rowTop(r) - TraceTimelineView::kGroupHeader / 2;
    const QPoint at = view->mapTo(&w, QPoint(TraceTimelineView::kLabelWidth / 2, y));
    if (at.y() < shot.height()) {
      EXPECT_GT(content(shot, QRect(at.x() - 100, at.y() - 6, 200, 12)).colours, 1u) << "label text";
    }
  }
  EXPECT_EQ(headers, 2);
  QImage mine = view->render(view->size());
  EXPECT_FALSE(mine.isNull());
}

}  // namespace
}  // namespace cudascope::gui

// --- Issue 24: the viewer as memory_viz and Perfetto users expect it ---

namespace cudascope::gui {
namespace {

QString gui_data(const char* name) { return QString(CUDASCOPE_TEST_DATA) + "/../gui/data/" + name; }

// Saves `image` as docs/screenshots/NAME.png when CUDASCOPE_UPDATE_SCREENSHOTS names the folder.
void keep_screenshot(const QImage& image, const char* name) {
  const QByteArray dir = qgetenv("CUDASCOPE_UPDATE_SCREENSHOTS");
  if (!dir.isEmpty()) {
    EXPECT_TRUE(image.save(QString::fromUtf8(dir) + "/" + name + ".png"));
  }
}

TEST(GuiIssue24WindowTest, ClickingAnAllocationPinsItsReadableStackAndLinksEveryView) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.openFile(gui_data("snap_convnet_cpp.pickle.gz"));
  ASSERT_TRUE(wait_for(&w, SIGNAL(snapshotShown()))) << w.lastError().toStdString();
  SnapshotPage* page = w.snapshotPage();
  ASSERT_NE(page, nullptr);
  QApplication::processEvents();
  // Focus is on the plot after loading: W zooms without a click first.
  TimelineView* active = page->activeView();
  EXPECT_EQ(w.focusWidget(), active) << "the plot takes the keys after loading";
  const qint64 span = active->rangeEnd() - active->rangeBegin();
  QTest::keyClick(w.focusWidget(), Qt::Key_W);
  EXPECT_LT(active->rangeEnd() - active->rangeBegin(), span);
  EXPECT_EQ(page->segmentView()->rangeEnd() - page->segmentView()->rangeBegin(), active->rangeEnd() - active->rangeBegin())
      << "one zoom for both timelines";
  QTest::keyClick(active, Qt::Key_Home);

  // The OOM: a marker wide enough to hit, inside the default view, with what was asked on hover.
  const auto& snap = *w.current()->snapshot;
  const uint32_t oom = uint32_t(snap.trace.size() - 1);
  const double oom_x = active->xOf(snap.trace[oom].time_us);
  EXPECT_LT(oom_x, active->plotRect().right() - 4) << "not on the edge";
  const QPoint oom_pt(int(oom_x) - active->plotRect().left() + 2, 40);
  EXPECT_EQ(active->oomAt(oom_pt), int64_t(oom));
  const QString oom_tip = active->describe(oom_pt, active->plotRect().size());
  EXPECT_TRUE(oom_tip.contains("OUT OF MEMORY") && oom_tip.contains("asked 12.00 GiB") && oom_tip.contains("1.50 GiB free"))
      << oom_tip.toStdString();

  // Click the largest allocation live at the end (the last step's 48 MiB activation).
  uint32_t big = UINT32_MAX;
  const auto intervals = w.current()->allocations->intervals();
  for (uint32_t i = 0; i < intervals.size(); ++i)
    if (intervals[i].end_entry == UINT32_MAX && (big == UINT32_MAX || intervals[i].size > intervals[big].size)) big = i;
  ASSERT_NE(big, UINT32_MAX);
  const auto& iv = intervals[big];
  active->setRange(iv.begin_us - 2000, iv.begin_us + 8000);
  QApplication::processEvents();
  QPoint click;
  for (int x = active->plotRect().width() / 2; x < active->plotRect().width() && click.isNull(); x += 3)
    for (int y = 5; y < active->plotRect().height(); y += 3)
      if (auto hit = w.current()->allocations->hit(
              analysis::TimelineView{active->rangeBegin(), active->rangeEnd(),
                                     std::max<uint64_t>(w.current()->allocations->peak_bytes() + w.current()->allocations->peak_bytes() / 20, 1),
                                     active->plotRect().width(), active->plotRect().height()},
              x, y);
          hit && !hit->merged && hit->intervals.front() == big) {
        click = QPoint(x, y) + active->plotRect().topLeft();
        break;
      }
  ASSERT_FALSE(click.isNull()) << "the allocation is drawn";
  const QString hover = active->describe(click - active->plotRect().topLeft(), active->plotRect().size());
  EXPECT_TRUE(hover.contains("forward (train_convnet.py:")) << "user frames are not cut off: " << hover.toStdString();
  EXPECT_LT(hover.count('\n'), 16) << hover.toStdString();
  QTest::mouseClick(active, Qt::LeftButton, Qt::NoModifier, click);
  QApplication::processEvents();
  const MemorySelection& sel = page->selection()->selection();
  ASSERT_TRUE(sel.valid);
  EXPECT_EQ(sel.interval, big);
  // Pinned stack: short names, user frame bold and in view, dispatcher folded, copyable.
  StackPanel* panel = page->stackPanel();
  EXPECT_TRUE(panel->heading()->text().contains("train_convnet.py")) << panel->heading()->text().toStdString();
  const int user = panel->model()->userRow();
  ASSERT_GE(user, 0);
  EXPECT_EQ(panel->list()->currentIndex().row(), user);
  EXPECT_TRUE(panel->list()->viewport()->rect().intersects(panel->list()->visualRect(panel->model()->index(user))));
  for (int r = 0; r < panel->model()->rowCount(); ++r)
    EXPECT_LT(panel->model()->index(r).data().toString().size(), 140);
  const QString copied = panel->copy();
  EXPECT_TRUE(copied.contains("at::_ops::conv2d::call(at::Tensor const&")) << "Copy has the full names";
  // Linked: Allocator state at its entry with its block outlined; its rows in the tables.
  EXPECT_EQ(page->statePage()->entry(), int64_t(sel.entry));
  EXPECT_FALSE(page->statePage()->view()->selectedRect().isEmpty());
  const auto* trace_table = page->traceTable();
  ASSERT_TRUE(trace_table->table()->currentIndex().isValid());
  EXPECT_EQ(trace_table->model()->recordAt(trace_table->table()->currentIndex().row()), sel.entry);
  ASSERT_TRUE(page->blockTable()->table()->currentIndex().isValid());
  page->tabs()->setCurrentIndex(2);
  QImage shot = screenshot(w, "cpp_stack_pinned_allocator_state");
  keep_screenshot(shot, "viewer_cpp_stack_pinned_allocator_state");
  page->tabs()->setCurrentIndex(0);
  shot = screenshot(w, "cpp_stack_pinned_timeline");
  keep_screenshot(shot, "viewer_cpp_stack_pinned_timeline");
  // F zooms to the selection.
  QTest::keyClick(active, Qt::Key_Home);
  active->setFocus();
  QTest::keyClick(active, Qt::Key_F);
  EXPECT_LE(active->rangeBegin(), iv.begin_us);
  EXPECT_LT(active->rangeEnd() - active->rangeBegin(), span / 2);
  // Event-order axis: both timelines switch; the labels count entries.
  page->axisBox()->setCurrentIndex(1);
  emit page->axisBox()->activated(1);
  EXPECT_EQ(active->axis(), SnapshotSelection::Axis::event_order);
  EXPECT_EQ(page->segmentView()->axis(), SnapshotSelection::Axis::event_order);
  ASSERT_FALSE(active->timeAxisLabels().empty());
  EXPECT_TRUE(active->timeAxisLabels().front().text.startsWith("entry"));
  // Tables open in file order; the header shows no sort.
  EXPECT_EQ(trace_table->table()->horizontalHeader()->sortIndicatorSection(), -1);
  EXPECT_EQ(page->segmentTable()->model()->recordAt(0), 0u);
}

TEST(GuiIssue24WindowTest, SeveralSnapshotsOpenInSeveralTabs) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  MainWindow w;
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QSignalSpy shown(&w, SIGNAL(snapshotShown()));
  w.openFiles({QString::fromStdString(data_path("snap_small_p5.pickle")), gui_data("snap_convnet_cpp.pickle.gz")});
  for (int i = 0; i < 100 && shown.count() < 2; ++i) shown.wait(200);
  ASSERT_EQ(shown.count(), 2) << w.lastError().toStdString();
  ASSERT_EQ(w.snapshotPages().size(), 2);
  QStringList titles;
  for (int i = 0; i < w.documents()->count(); ++i) titles << w.documents()->tabText(i);
  EXPECT_TRUE(titles.contains("snap_small_p5.pickle")) << titles.join(",").toStdString();
  EXPECT_TRUE(titles.contains("snap_convnet_cpp.pickle.gz")) << titles.join(",").toStdString();
  // A missing file: the message names it.
  w.openFile("/nonexistent/missing.pickle");
  EXPECT_TRUE(w.lastError().contains("/nonexistent/missing.pickle")) << w.lastError().toStdString();
  // Help lists the keys; the window fits a scaled screen.
  EXPECT_TRUE(MainWindow::shortcutsText().contains("W / S"));
  EXPECT_TRUE(MainWindow::shortcutsText().contains("F "));
  // What Ctrl+C copies where: the pinned stack whole; in a table or its stack list, one cell uncut.
  EXPECT_TRUE(MainWindow::shortcutsText().contains("in the pinned stack: copy the whole stack"));
  EXPECT_TRUE(MainWindow::shortcutsText().contains("in a table or a table's stack list: copy the current cell, uncut"));
  const QSize fits = MainWindow::initialSize(QSize(960, 520));  // 1920x1080 at QT_SCALE_FACTOR=2, less panels
  EXPECT_LE(fits.width(), 960);
  EXPECT_LE(fits.height(), 520);
  EXPECT_TRUE(w.acceptDrops());
}

TEST(GuiIssue24WindowTest, ATruncatedTraceIsFlaggedOnItsTabAndInTheStatusBar) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  QTemporaryDir dir;
  QFile in(QString::fromStdString(data_path("kineto_train_h100_s3.json.gz")));
  ASSERT_TRUE(in.open(QIODevice::ReadOnly));
  const QByteArray bytes = in.readAll();
  const QString cut = dir.filePath("train_cut.json.gz");
  QFile out(cut);
  ASSERT_TRUE(out.open(QIODevice::WriteOnly));
  out.write(bytes.left(bytes.size() * 2 / 3));
  out.close();
  ASSERT_TRUE(out.open(QIODevice::ReadWrite));
  ASSERT_TRUE(out.setFileTime(QDateTime::currentDateTime().addSecs(-300), QFileDevice::FileModificationTime));
  out.close();
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  w.openFile(cut);
  ASSERT_TRUE(wait_for(&w, SIGNAL(traceShown(cudascope::gui::TracePage*)))) << w.lastError().toStdString();
  TracePage* page = w.tracePages().front();
  EXPECT_TRUE(page->document()->cutShort());
  EXPECT_FALSE(page->document()->following());
  EXPECT_FALSE(page->followBox()->isChecked());
  EXPECT_TRUE(w.documents()->tabText(w.documents()->currentIndex()).contains("cut short"));
  EXPECT_TRUE(w.statusText().contains("CUT SHORT")) << w.statusText().toStdString();
  EXPECT_TRUE(page->statusText().contains("CUT SHORT")) << page->statusText().toStdString();
  // The long note does not widen the window (it did, past the screen's edge).
  QApplication::processEvents();
  EXPECT_LE(w.minimumSizeHint().width(), 1600);
  EXPECT_LE(w.width(), 1600);
  // Ruler labels at microsecond zoom all differ.
  auto* view = page->view();
  const qint64 mid = (view->rangeBegin() + view->rangeEnd()) / 2;
  view->setRange(mid, mid + 4000);
  QApplication::processEvents();
  const auto ticks = view->rulerLabels();
  ASSERT_GE(ticks.size(), 3u);
  for (size_t i = 1; i < ticks.size(); ++i) EXPECT_NE(ticks[i].second, ticks[i - 1].second) << ticks[i].second.toStdString();
  view->resetZoom();
  // Search matches are highlighted and zoomed to.
  page->searchBox()->setText("elementwise");
  EXPECT_TRUE(page->findNext());
  view->resetZoom();
  QImage shot = screenshot(w, "truncated_trace_flagged");
  keep_screenshot(shot, "viewer_truncated_trace_flagged");
  // Rows never grow past the lane cap.
  for (quint32 r = 0; r < page->document()->index().rows().size(); ++r)
    EXPECT_LE(view->shownLanes(r), TraceTimelineView::kMaxLanes);
}


// --- Issue 24, findings 15 and 16: folded lanes, Help, drag-and-drop, keys, search, counters ---

// Chrome trace events, written into a file the viewer opens.
QString thread_name(int tid, const QString& name) {
  return QString(R"({"ph":"M","name":"thread_name","pid":1,"tid":%1,"args":{"name":"%2"}})").arg(tid).arg(name);
}
QString slice(int tid, const QString& name, double ts_us, double dur_us, const char* cat = "kernel") {
  return QString(R"({"ph":"X","cat":"%1","name":"%2","pid":1,"tid":%3,"ts":%4,"dur":%5})")
      .arg(cat, name)
      .arg(tid)
      .arg(ts_us, 0, 'f', 3)
      .arg(dur_us, 0, 'f', 3);
}
QString counter(const QString& name, const QString& key, double ts_us, double value) {
  return QString(R"({"ph":"C","name":"%1","pid":1,"tid":1,"ts":%2,"args":{"%3":%4}})")
      .arg(name)
      .arg(ts_us, 0, 'f', 3)
      .arg(key)
      .arg(value, 0, 'f', 0);
}
QString write_trace(const QTemporaryDir& dir, const QString& name, const QStringList& events) {
  const QString path = dir.filePath(name);
  QFile file(path);
  EXPECT_TRUE(file.open(QIODevice::WriteOnly));
  file.write(("{\"traceEvents\":[" + events.join(",") + "]}").toUtf8());
  return path;
}

TracePage* open_trace(MainWindow& w, const QString& path) {
  QSignalSpy shown(&w, SIGNAL(traceShown(cudascope::gui::TracePage*)));
  w.openFile(path);
  if (!shown.wait(60000) && shown.isEmpty()) return nullptr;
  QApplication::processEvents();
  return shown.front().front().value<TracePage*>();
}

quint32 row_labelled(const TraceDocument& doc, const QString& label) {
  const auto& rows = doc.index().rows();
  for (quint32 r = 0; r < rows.size(); ++r)
    if (QString::fromStdString(rows[r].label) == label) return r;
  return TraceTimelineView::kNone;
}

// The widget's x for a trace time, as the view maps its range onto its plot.
int x_at(const TraceTimelineView* view, qint64 t_ns) {
  const QRect plot = view->plotRect();
  return plot.left() + int(double(t_ns - view->rangeBegin()) * plot.width() / double(view->rangeEnd() - view->rangeBegin()));
}

int yellow_pixels(const QImage& image, QRect r) {
  int n = 0;
  r = r.intersected(image.rect());
  for (int y = r.top(); y <= r.bottom(); ++y)
    for (int x = r.left(); x <= r.right(); ++x) n += (image.pixel(x, y) & 0xffffffu) == 0xffe600u;  // a search match's outline
  return n;
}

TEST(GuiIssue24WindowTest, ThousandsOfOverlappingAnnotationsFoldIntoOneCappedRowWithTheirCount) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  // Each annotation starts inside the one before: one lane each, as GPU annotations that
  // overlap without nesting give. A second stream of kernels must stay on screen.
  QTemporaryDir dir;
  QStringList events{thread_name(7, "annotations"), thread_name(8, "kernels")};
  const int annotations = 3000;
  for (int i = 0; i < annotations; ++i) events << slice(7, QString("annotation %1").arg(i), 2.0 * i, 50000, "gpu_user_annotation");
  for (int k = 0; k < 5; ++k) events << slice(8, "after_kernel", 10000.0 * k, 2000);
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  TracePage* page = open_trace(w, write_trace(dir, "overlapping.json", events));
  ASSERT_NE(page, nullptr) << w.lastError().toStdString();
  TraceTimelineView* view = page->view();
  const TraceDocument& doc = *page->document();
  const quint32 deep = row_labelled(doc, "annotations"), other = row_labelled(doc, "kernels");
  ASSERT_NE(deep, TraceTimelineView::kNone);
  ASSERT_NE(other, TraceTimelineView::kNone);
  const int lanes = doc.index().rows()[deep].lanes;
  ASSERT_GT(lanes, TraceTimelineView::kMaxLanes) << "the annotations overlap";
  EXPECT_EQ(view->shownLanes(deep), TraceTimelineView::kMaxLanes);
  EXPECT_EQ(view->foldedLanes(deep), lanes - (TraceTimelineView::kMaxLanes - 1));
  EXPECT_EQ(view->rowHeight(deep), TraceTimelineView::kMaxLanes * TraceTimelineView::kLane + 6);
  EXPECT_EQ(view->foldedLanes(other), 0);
  view->render(view->size());
  EXPECT_LE(view->rowTop(other) + view->rowHeight(other), view->plotRect().bottom() + 1) << "the other stream is on screen";
  // The folded lane: one run that counts every event deeper than the lanes shown.
  const quint32 track = doc.index().rows()[deep].track;
  quint32 deeper = 0;
  for (std::size_t e = 0; e < doc.model().event_count(); ++e)
    deeper += doc.model().event(e).track == track && doc.model().event(e).depth >= TraceTimelineView::kMaxLanes - 1;
  std::vector<TraceTimelineView::PaintedItem> folded;
  int kernels_drawn = 0;
  for (const auto& item : view->paintedItems()) {
    kernels_drawn += item.row == other;
    if (item.row != deep) continue;
    EXPECT_LT(item.item.depth, TraceTimelineView::kMaxLanes);
    EXPECT_GE(item.rect.top(), view->rowTop(deep));
    EXPECT_LE(item.rect.bottom(), view->rowTop(deep) + view->rowHeight(deep));
    if (item.item.depth == TraceTimelineView::kMaxLanes - 1) folded.push_back(item);
  }
  EXPECT_EQ(kernels_drawn, 5);
  ASSERT_EQ(folded.size(), 1u) << "the folded annotations overlap all along: one run";
  EXPECT_EQ(folded.front().item.count, deeper);
  const QString tip = view->describe(folded.front().rect.center().toPoint());
  EXPECT_TRUE(tip.contains(QString::number(deeper) + " events") && tip.contains("folded")) << tip.toStdString();
}

TEST(GuiIssue24WindowTest, HoveringACounterShowsItsValueAtThePointer) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  QTemporaryDir dir;
  QStringList events{thread_name(1, "main"), slice(1, "work", 0, 4000)};
  const double depths[] = {5, 17, 42, 9};
  const double bytes[] = {3 << 20, 5 << 20, 2 << 20, 7 << 20};
  for (int i = 0; i < 4; ++i) {
    events << counter("queue", "depth", 1000.0 * i, depths[i]);
    events << counter("GPU Memory", "allocated", 1000.0 * i, bytes[i]);
  }
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  TracePage* page = open_trace(w, write_trace(dir, "counters.json", events));
  ASSERT_NE(page, nullptr) << w.lastError().toStdString();
  TraceTimelineView* view = page->view();
  const TraceDocument& doc = *page->document();
  for (const QString& label : {QString("queue depth"), QString("GPU Memory allocated")}) {
    const quint32 row = row_labelled(doc, label);
    ASSERT_NE(row, TraceTimelineView::kNone) << label.toStdString();
    const auto& r = doc.index().rows()[row];
    const auto& series = doc.model().counters()[r.counter].series[r.series];
    const int y = view->rowTop(row) + view->rowHeight(row) / 2;
    EXPECT_TRUE(view->describe(QPoint(view->plotRect().left() + 2, y)).isEmpty()) << "no value before the first sample";
    // Midway between samples, the sample in force; bytes in MiB.
    for (std::size_t i = 0; i + 1 < series.ts_ns.size(); ++i) {
      const QPoint at(x_at(view, (series.ts_ns[i] + series.ts_ns[i + 1]) / 2), y);
      const double v = series.values[i];
      const QString value = label.contains("Memory") ? QString::number(v / 1048576.0, 'f', 2) + " MiB" : QString::number(v, 'g', 8);
      const QString tip = view->describe(at);
      EXPECT_TRUE(tip.startsWith(label + "\n" + value + " at")) << tip.toStdString() << " wanted " << value.toStdString();
    }
  }
  // The pointer itself: a move over the counter shows the same text as a tooltip.
  const quint32 row = row_labelled(doc, "queue depth");
  const auto& r = doc.index().rows()[row];
  const auto& series = doc.model().counters()[r.counter].series[r.series];
  const QPoint at(x_at(view, (series.ts_ns[1] + series.ts_ns[2]) / 2), view->rowTop(row) + view->rowHeight(row) / 2);
  QTest::mouseMove(view, at);
  QApplication::processEvents();
  EXPECT_EQ(QToolTip::text(), view->describe(at));
  EXPECT_TRUE(QToolTip::text().contains(QString::number(series.values[1], 'g', 8))) << QToolTip::text().toStdString();
}

// Accepts the next message box that opens (polling, as it runs its own event loop) and
// hands back its text; empty when none opened within `ms`.
class MessageBoxCatcher {
 public:
  explicit MessageBoxCatcher(int ms = 5000) {
    timer_.setInterval(20);
    QObject::connect(&timer_, &QTimer::timeout, [this, ms] {
      if (auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget())) {
        title_ = box->windowTitle();
        text_ = box->text();
        box->accept();
        timer_.stop();
      } else if ((waited_ += 20) > ms) {
        timer_.stop();
      }
    });
    timer_.start();
  }
  QString title() const { return title_; }
  QString text() const { return text_; }

 private:
  QTimer timer_;
  QString title_, text_;
  int waited_ = 0;
};

TEST(GuiIssue24WindowTest, HelpMenuAndF1ShowTheKeyboardShortcuts) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  MainWindow w;
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QMenu* help = nullptr;
  for (QAction* action : w.menuBar()->actions())
    if (action->menu() && action->text().remove('&') == "Help") help = action->menu();
  ASSERT_NE(help, nullptr) << "a Help menu beside File";
  QAction* keys = nullptr;
  for (QAction* action : help->actions())
    if (action->text().remove('&') == "Keyboard shortcuts") keys = action;
  ASSERT_NE(keys, nullptr);
  {
    MessageBoxCatcher box;
    keys->trigger();
    EXPECT_EQ(box.title(), "Keyboard shortcuts");
    EXPECT_EQ(box.text(), MainWindow::shortcutsText());
  }
  // F1, from anywhere in the window.
  w.activateWindow();
  ASSERT_TRUE(QTest::qWaitForWindowActive(&w));
  MessageBoxCatcher box;
  QTest::keyClick(&w, Qt::Key_F1);
  QTest::qWait(100);
  EXPECT_EQ(box.text(), MainWindow::shortcutsText()) << "F1 opens the list";
}

// Drag events go to the widget under the pointer, as the window system delivers them; Qt
// passes them up to the first that accepts drops.
bool drag_and_drop(QWidget* under, QPoint at, const QMimeData& data) {
  QDragEnterEvent enter(at, Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(under, &enter);
  if (!enter.isAccepted()) return false;
  QDropEvent drop(QPointF(at), Qt::CopyAction, &data, Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(under, &drop);
  return drop.isAccepted();
}

TEST(GuiIssue24WindowTest, DroppedFilesOpenEachInItsOwnTab) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  QTemporaryDir dir;
  const QString trace = write_trace(dir, "dropped_trace.json", {thread_name(1, "main"), slice(1, "dropped_kernel", 0, 100)});
  const QString second = write_trace(dir, "dropped_again.json", {thread_name(1, "main"), slice(1, "again_kernel", 0, 100)});
  const QString snapshot = QString::fromStdString(data_path("snap_small_p5.pickle"));
  MainWindow w;
  w.resize(1200, 800);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  QWidget* welcome = w.childAt(w.rect().center());
  ASSERT_NE(welcome, nullptr);
  const QPoint at = welcome->mapFrom(&w, w.rect().center());
  QMimeData text;
  text.setText("not a file");
  EXPECT_FALSE(drag_and_drop(welcome, at, text)) << "text is not a file";
  // Two local files and a web address: both files open, the address is passed over.
  QMimeData files;
  files.setUrls({QUrl::fromLocalFile(snapshot), QUrl::fromLocalFile(trace), QUrl("https://example.com/remote.pickle")});
  QSignalSpy snapshots(&w, SIGNAL(snapshotShown()));
  QSignalSpy traces(&w, SIGNAL(traceShown(cudascope::gui::TracePage*)));
  EXPECT_TRUE(drag_and_drop(welcome, at, files));
  for (int i = 0; i < 300 && (snapshots.isEmpty() || traces.isEmpty()); ++i) QTest::qWait(100);
  ASSERT_EQ(snapshots.count(), 1) << w.lastError().toStdString();
  ASSERT_EQ(traces.count(), 1) << w.lastError().toStdString();
  auto titles = [&w] {
    QStringList out;
    for (int i = 0; i < w.documents()->count(); ++i) out << w.documents()->tabText(i);
    return out;
  };
  EXPECT_EQ(titles().size(), 2) << titles().join(",").toStdString();
  EXPECT_TRUE(titles().contains("snap_small_p5.pickle")) << titles().join(",").toStdString();
  EXPECT_EQ(titles().filter("dropped_trace.json").size(), 1) << titles().join(",").toStdString();
  // Dropped on the open trace's timeline: it reaches the window all the same.
  QApplication::processEvents();
  TraceTimelineView* view = w.tracePages().front()->view();
  QMimeData again;
  again.setUrls({QUrl::fromLocalFile(second)});
  EXPECT_TRUE(drag_and_drop(view, view->rect().center(), again));
  for (int i = 0; i < 300 && traces.count() < 2; ++i) QTest::qWait(100);
  EXPECT_EQ(traces.count(), 2) << w.lastError().toStdString();
  EXPECT_EQ(titles().filter("dropped_again.json").size(), 1) << titles().join(",").toStdString();
}

TEST(GuiIssue24WindowTest, TraceKeysAsInPerfettoAndSearchMatchesOutlinedAndZoomedTo) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  QTemporaryDir dir;
  QStringList events{thread_name(1, "main")};
  for (int i = 0; i < 20; ++i) events << slice(1, i % 2 ? "beta_kernel" : "alpha_kernel", 2000.0 * i, 1000);
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  TracePage* page = open_trace(w, write_trace(dir, "keys.json", events));
  ASSERT_NE(page, nullptr) << w.lastError().toStdString();
  TraceTimelineView* view = page->view();
  const auto& m = page->document()->model();
  EXPECT_EQ(w.focusWidget(), view) << "the timeline takes the keys after loading";
  QTest::mouseMove(view, QPoint(5, 5));  // over the labels: W and S zoom about the middle
  const qint64 t0 = view->rangeBegin(), span = view->rangeEnd() - view->rangeBegin();
  auto current_span = [view] { return view->rangeEnd() - view->rangeBegin(); };
  QTest::keyClick(view, Qt::Key_W);
  EXPECT_LT(current_span(), span);
  const qint64 zoomed = current_span(), zoomed_t0 = view->rangeBegin();
  QTest::keyClick(view, Qt::Key_D);
  EXPECT_GT(view->rangeBegin(), zoomed_t0);
  QTest::keyClick(view, Qt::Key_A);
  EXPECT_EQ(view->rangeBegin(), zoomed_t0);
  QTest::keyClick(view, Qt::Key_S);
  EXPECT_GT(current_span(), zoomed);
  QTest::keyClick(view, Qt::Key_Home);
  EXPECT_EQ(view->rangeBegin(), t0);
  EXPECT_EQ(current_span(), span);
  // Ctrl+wheel zooms as the wheel does.
  const QPoint middle = view->plotRect().center();
  QWheelEvent wheel(middle, view->mapToGlobal(middle), {}, QPoint(0, 240), Qt::NoButton, Qt::ControlModifier,
                    Qt::NoScrollPhase, false);
  QApplication::sendEvent(view, &wheel);
  EXPECT_LT(current_span(), span);
  QTest::keyClick(view, Qt::Key_Home);

  // Click an event, then F zooms to it.
  view->render(view->size());
  ASSERT_FALSE(view->paintedItems().empty());
  const auto target = view->paintedItems()[view->paintedItems().size() / 2];
  QTest::mouseClick(view, Qt::LeftButton, Qt::NoModifier, target.rect.center().toPoint());
  ASSERT_EQ(view->selectedEvent(), target.item.event);
  QTest::keyClick(view, Qt::Key_F);
  const auto& chosen = m.event(target.item.event);
  EXPECT_LE(view->rangeBegin(), chosen.ts_ns);
  EXPECT_GE(view->rangeEnd(), chosen.end_ns());
  EXPECT_LT(current_span(), span / 4);

  // Search: the current match selected and zoomed to; every match outlined, nothing else.
  QTest::keyClick(view, Qt::Key_Home);
  QTest::keyClick(view, Qt::Key_Escape);
  page->searchBox()->setText("beta");
  ASSERT_TRUE(page->findNext());
  const quint32 first = view->selectedEvent();
  ASSERT_NE(first, TraceTimelineView::kNone);
  EXPECT_EQ(std::string(m.name(m.event(first))), "beta_kernel");
  EXPECT_LE(view->rangeBegin(), m.event(first).ts_ns);
  EXPECT_GE(view->rangeEnd(), m.event(first).end_ns());
  EXPECT_LT(current_span(), span / 4);
  ASSERT_TRUE(page->findNext());
  EXPECT_GT(m.event(view->selectedEvent()).ts_ns, m.event(first).ts_ns) << "Next goes on in time";
  ASSERT_TRUE(page->findPrevious());
  EXPECT_EQ(view->selectedEvent(), first);
  QTest::keyClick(view, Qt::Key_Home);
  QTest::keyClick(view, Qt::Key_Escape);  // the selection's own outline aside
  QImage image = view->render(view->size());
  int outlined = 0, plain = 0;
  for (const auto& item : view->paintedItems()) {
    const int yellow = yellow_pixels(image, item.rect.toAlignedRect().adjusted(-2, -2, 2, 2));
    if (m.name(m.event(item.item.event)) == "beta_kernel") outlined += yellow > 0;
    else plain += yellow > 0;
  }
  EXPECT_EQ(outlined, 10);
  EXPECT_EQ(plain, 0);
  page->searchBox()->setText("");
  image = view->render(view->size());
  EXPECT_EQ(yellow_pixels(image, view->plotRect()), 0) << "a cleared search outlines nothing";
}

// --- Issue 23: following a merged timeline of rank files still being written ---

TEST(GuiIssue23WindowTest, ARankTimelineFollowsItsFilesAsTheyGrowAndKeepsTheView) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  QTemporaryDir dir;
  // Two ranks' writers still running: each file cut mid-event.
  const std::string text0 = two_rank_trace(0, "node-a", 0), text1 = two_rank_trace(1, "node-b", 3'200'000);
  const std::size_t cut0 = text0.size() / 2, cut1 = text1.size() * 2 / 5;
  const QString r0 = dir.filePath("trace_0.json"), r1 = dir.filePath("trace_1.json");
  std::ofstream(r0.toStdString()) << text0.substr(0, cut0);
  std::ofstream(r1.toStdString()) << text1.substr(0, cut1);
  MainWindow w;
  w.resize(1400, 760);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  ASSERT_EQ(open_traces(w, {r0, r1}, 1), 1) << w.lastError().toStdString();
  const auto pages = w.tracePages();
  ASSERT_EQ(pages.size(), 1) << "one tab, one timeline";
  TracePage* page = pages[0];
  TraceDocument* doc = page->document();
  ASSERT_TRUE(doc->isRankTimeline());
  EXPECT_TRUE(doc->following());
  EXPECT_TRUE(page->followBox()->isEnabled());
  EXPECT_TRUE(page->followBox()->isChecked());
  EXPECT_TRUE(page->statusText().contains("following 2 of 2 files as they grow")) << page->statusText().toStdString();
  const std::size_t before = doc->model().event_count();

  // The user zooms into the early steps and picks a kernel.
  auto* view = page->view();
  const qint64 t0 = doc->index().begin_ns() + 1'000'000, t1 = t0 + 3'000'000;
  view->setRange(t0, t1);
  const auto& m = doc->model();
  for (quint32 i = 0; i < m.event_count(); ++i)
    if (m.name(m.event(i)) == "elementwise_kernel") {
      view->selectEvent(i);
      break;
    }
  ASSERT_NE(view->selectedEvent(), TraceTimelineView::kNone);
  page->details()->setEvent(doc, view->selectedEvent());

  // Both writers finish; the page merges again while the window stays responsive.
  std::ofstream(r0.toStdString(), std::ios::app) << text0.substr(cut0);
  QTest::qWait(50);
  std::ofstream(r1.toStdString(), std::ios::app) << text1.substr(cut1);
  for (int i = 0; i < 200 && doc->following(); ++i) QTest::qWait(50);
  EXPECT_FALSE(doc->following()) << "every file is complete";
  EXPECT_FALSE(page->followBox()->isChecked());
  EXPECT_FALSE(page->followBox()->isEnabled()) << "nothing is left to follow";
  EXPECT_GT(doc->model().event_count(), before);
  EXPECT_EQ(view->rangeBegin(), t0) << "the view keeps its zoom and position";
  EXPECT_EQ(view->rangeEnd(), t1);
  EXPECT_EQ(view->selectedEvent(), TraceTimelineView::kNone) << "the old merge's event ids are dropped";
  EXPECT_EQ(page->details()->rowCount(), 0);
  EXPECT_FALSE(page->statusText().contains("following")) << page->statusText().toStdString();

  // What the complete files give, opened afresh.
  ASSERT_EQ(open_traces(w, {r0, r1}, 1), 1) << w.lastError().toStdString();
  TraceDocument* fresh = w.tracePages().back()->document();
  ASSERT_NE(fresh, doc);
  EXPECT_EQ(doc->model().event_count(), fresh->model().event_count());
  EXPECT_EQ(doc->index().rows().size(), fresh->index().rows().size());
  ASSERT_EQ(doc->rankGroups().size(), 2u);
  EXPECT_EQ(doc->rankGroups()[1].alignment.collectives, 6) << "every step's all-reduce paired";
  EXPECT_EQ(doc->rankGroups()[1].alignment.offset_ns, fresh->rankGroups()[1].alignment.offset_ns);

  // Every rank's kernels are drawn, the last steps' included.
  w.documents()->setCurrentWidget(page);
  view->resetZoom();
  QImage shot = screenshot(w, "two_ranks_followed");
  EXPECT_FALSE(shot.isNull());
  std::set<int> ranks_drawn;
  qint64 last_kernel = 0;
  for (const auto& item : view->paintedItems()) {
    if (doc->model().cat(doc->model().event(item.item.event)) != "kernel") continue;
    ranks_drawn.insert(doc->rankGroupOfRow(item.row));
    last_kernel = std::max<qint64>(last_kernel, item.item.end_ns);
  }
  EXPECT_EQ(ranks_drawn, (std::set<int>{0, 1}));
  EXPECT_GT(last_kernel, doc->index().begin_ns() + 10'000'000) << "the sixth step, written after opening, is drawn";
}

}  // namespace
}  // namespace cudascope::gui

// --- cudascope-viewer --screenshot: cudascope's own traces of four NCCL ranks, one timeline ---

namespace cudascope::gui {
namespace {

// Writes the four ranks' traces of analysis::testing::nccl_job() under build/artifacts/nccl_ranks
// (also what the documented command can be tried on: docs/gui.md).
QStringList write_nccl_rank_traces() {
  const QString dir = QString(CUDASCOPE_ARTIFACTS) + "/nccl_ranks";
  QDir().mkpath(dir);
  QStringList paths;
  for (const auto& rank : analysis::testing::nccl_job()) {
    paths << dir + QStringLiteral("/r_%1.json").arg(rank.rank());
    rank.write(paths.back().toStdString());
  }
  return paths;
}

// What `cudascope-viewer --screenshot PNG --select TEXT FILES` does, on the window it runs:
// the exit code and message it ends with.
std::pair<int, QString> run_screenshot(MainWindow& w, const QStringList& paths, ScreenshotOptions options) {
  auto* run = new ScreenshotRun(&w, std::move(options));
  QSignalSpy finished(run, &ScreenshotRun::finished);
  w.openFiles(paths);
  if (finished.isEmpty() && !finished.wait(60000)) return {-1, "no outcome within a minute"};  // a missing file fails at once
  return {finished.front().at(0).toInt(), finished.front().at(1).toString()};
}

TEST(GuiScreenshotTest, AScreenshotOfNcclRanksShowsTheSelectedKernelsCommunicator) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  const QStringList paths = write_nccl_rank_traces();
  const QString png = QString(CUDASCOPE_ARTIFACTS) + "/viewer_nccl_ranks_paired.png";
  QFile::remove(png);
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  ASSERT_TRUE(QTest::qWaitForWindowExposed(&w));
  const auto [code, message] = run_screenshot(w, paths, {png, "ncclDevKernel_AllReduce", 3});
  ASSERT_EQ(code, 0) << message.toStdString();
  EXPECT_TRUE(message.startsWith(png)) << message.toStdString();

  const auto pages = w.tracePages();
  ASSERT_EQ(pages.size(), 1) << "four ranks, one timeline";
  TracePage* page = pages.front();
  const quint32 selected = page->view()->selectedEvent();
  ASSERT_NE(selected, TraceTimelineView::kNone);
  EXPECT_TRUE(page->document()->model().name(page->document()->model().event(selected)).starts_with("ncclDevKernel_AllReduce"));
  const QString pairing = page->details()->value("Paired across ranks by");
  EXPECT_TRUE(pairing.startsWith("NCCL communicator and order (communicator 0x")) << pairing.toStdString();

  const QImage shot(png);
  ASSERT_FALSE(shot.isNull()) << png.toStdString();
  EXPECT_EQ(shot.size(), w.size() * w.devicePixelRatio());
  const QRect timeline(page->view()->mapTo(&w, QPoint(0, 0)), page->view()->size());
  EXPECT_GT(content(shot, timeline).colours, 8u) << "the ranks' rows drawn";
  const QRect details(page->panels()->mapTo(&w, QPoint(0, 0)), page->panels()->size());
  EXPECT_GT(content(shot, details).drawn_fraction, 0.01) << "the details' text";
}

TEST(GuiScreenshotTest, AScreenshotRunFailsWhenNoEventIsNamedAsAsked) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  const QString png = QString(CUDASCOPE_ARTIFACTS) + "/viewer_no_such_kernel.png";
  QFile::remove(png);
  MainWindow w;
  w.show();
  const auto [code, message] = run_screenshot(w, write_nccl_rank_traces(), {png, "no_such_kernel", 1});
  EXPECT_EQ(code, 1);
  EXPECT_EQ(message, "no event's name contains \"no_such_kernel\"");
  EXPECT_FALSE(QFile::exists(png));
  const auto [missing, why] = run_screenshot(w, {QString(CUDASCOPE_ARTIFACTS) + "/no_such_trace.json"}, {png, {}, 1});
  EXPECT_EQ(missing, 1) << why.toStdString();
  // The search wraps around after its last match, so a match past the count would select an
  // earlier one: the run refuses instead.
  MainWindow again;
  again.show();
  const auto [past, past_why] = run_screenshot(again, write_nccl_rank_traces(), {png, "ncclDevKernel", 100000});
  EXPECT_EQ(past, 1);
  EXPECT_TRUE(past_why.startsWith("--match 100000: only ")) << past_why.toStdString();
  EXPECT_FALSE(QFile::exists(png));
}

// Memory of the process in KiB, from /proc/self/status ("VmRSS:", "VmHWM:"); -1 when unread.
long status_kib(const std::string& key) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind(key, 0) == 0) return std::stol(line.substr(key.size()));
  return -1;
}

// Starts measuring the peak anew: writing 5 to clear_refs sets VmHWM to the current RSS
// (Linux 4.0 on); false where that is not possible.
bool reset_peak_memory() {
  std::ofstream("/proc/self/clear_refs") << "5";
  const long peak = status_kib("VmHWM:"), now = status_kib("VmRSS:");
  return peak >= 0 && now >= 0 && peak <= now + 1024;
}

// Asks every cell of `view` for its tooltip, as hovering each would.
void hover_every_cell(const QAbstractItemView* view) {
  const QAbstractItemModel* model = view->model();
  for (int r = 0; r < model->rowCount(); ++r)
    for (int c = 0; c < model->columnCount(); ++c) EXPECT_LT(model->index(r, c).data(Qt::ToolTipRole).toString().size(), 2 * kMaxTooltipNameChars);
}

// What opening the views of a 40 MB name may add to the peak, beyond the copies of the name
// the data holds: each view shows a screen's worth of it (laid out whole, in the details and
// the range summary, it took over 1.3 GB). Memory rather than time, so that a loaded machine
// does not fail the test.
constexpr long kHugeNameBudgetKiB = 64 * 1024;

// The peak since reset_peak_memory() above `base`, in KiB.
long peak_added(long base) { return status_kib("VmHWM:") - base; }

TEST(GuiHugeNameWindowTest, EveryViewOfAFortyMegabyteTraceNameOpensWithinAMemoryBudget) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  QTemporaryDir dir;
  const std::string huge = "huge_name_" + std::string(40'000'000, 'x');
  const QString path = dir.filePath("huge.json");
  std::ofstream(path.toStdString()) << testing::huge_name_trace(huge);
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  TracePage* page = open_trace(w, path);
  ASSERT_NE(page, nullptr) << w.lastError().toStdString();

  // Selecting it: the timeline zooms to it, the details show it. They keep one copy of the
  // name, for copying it.
  ASSERT_TRUE(reset_peak_memory()) << "the peak memory cannot be reset (/proc/self/clear_refs, Linux 4.0 on)";
  long base = status_kib("VmRSS:");
  page->searchBox()->setText("huge_name");
  ASSERT_TRUE(page->findNext());
  w.grab();
  hover_every_cell(qobject_cast<QTableView*>(page->panels()->widget(0)));
  EXPECT_EQ(page->details()->value("Name").size(), kMaxLabelChars + 1);
  std::printf("selecting a 40 MB name added %.1f MiB to the peak\n", double(peak_added(base)) / 1024);
  EXPECT_LT(peak_added(base), long(huge.size() / 1024) + kHugeNameBudgetKiB);

  // The range summary, once computed (its rows hold the kernel's and the annotation's names),
  // shown, sorted by name and hovered.
  QSignalSpy summarised(page, &TracePage::summaryReady);
  page->view()->setSelectedRange(page->document()->index().begin_ns(), page->document()->index().end_ns());
  ASSERT_TRUE(summarised.wait(60000));
  ASSERT_TRUE(reset_peak_memory());
  base = status_kib("VmRSS:");
  auto* summary = qobject_cast<QTableView*>(page->panels()->widget(1));
  ASSERT_NE(summary, nullptr);
  ASSERT_EQ(summary->model()->rowCount(), 4) << "the stream, both kernels and the annotation";
  page->panels()->setCurrentWidget(summary);
  summary->sortByColumn(RangeSummaryModel::Name, Qt::AscendingOrder);
  w.grab();
  hover_every_cell(summary);
  std::printf("showing a 40 MB name in the range summary added %.1f MiB to the peak\n", double(peak_added(base)) / 1024);
  EXPECT_LT(peak_added(base), kHugeNameBudgetKiB);

  // Ctrl+C copies a cell's whole text, not the prefix it shows: in both rows of the name.
  summary->setFocus();
  int copied_rows = 0;
  for (int r = 0; r < summary->model()->rowCount(); ++r) {
    if (summary->model()->index(r, RangeSummaryModel::Name).data(Qt::UserRole).toString().size() != qsizetype(huge.size())) continue;
    QApplication::clipboard()->clear();
    summary->setCurrentIndex(summary->model()->index(r, RangeSummaryModel::Name));
    QTest::keyClick(summary, Qt::Key_C, Qt::ControlModifier);
    const QString copied = QApplication::clipboard()->text();
    EXPECT_EQ(copied.size(), qsizetype(huge.size()));
    EXPECT_TRUE(copied.toStdString() == huge) << copied.left(80).toStdString();
    ++copied_rows;
  }
  EXPECT_EQ(copied_rows, 2) << "the kernel and the annotation";
}

TEST(GuiHugeNameWindowTest, EveryViewOfAFortyMegabyteFrameNameOpensWithinAMemoryBudget) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  QTemporaryDir dir;
  const std::string huge = "huge_name_" + std::string(40'000'000, 'x');
  const QString path = dir.filePath("huge_snapshot.json");
  std::ofstream(path.toStdString()) << testing::snapshot_json({"train_step", huge, "eval_step"});
  MainWindow w;
  w.resize(1600, 1000);
  w.show();
  w.openFile(path);
  ASSERT_TRUE(wait_for(&w, SIGNAL(snapshotShown()))) << w.lastError().toStdString();
  SnapshotPage* page = w.snapshotPage();
  QApplication::processEvents();
  ASSERT_TRUE(reset_peak_memory()) << "the peak memory cannot be reset (/proc/self/clear_refs, Linux 4.0 on)";
  const long base = status_kib("VmRSS:");

  for (int t = 0; t < page->tabs()->count(); ++t) {
    page->tabs()->setCurrentIndex(t);
    w.grab();
  }
  for (RecordTablePage* table : {page->traceTable(), page->blockTable()}) {
    page->tabs()->setCurrentWidget(table);
    table->table()->selectRow(1);  // the allocation from the huge frame: its stack is pinned
    // By the Frame column: eval_step, the huge name, train_step; the huge one stays second.
    table->table()->sortByColumn(table->model()->columnCount() - 1, Qt::AscendingOrder);
    w.grab();
    hover_every_cell(table->table());
    EXPECT_EQ(table->model()->index(1, table->model()->columnCount() - 1).data().toString().size(),
              kMaxLabelChars + 1 + QStringLiteral(" (train.py:13)").size());
  }
  hover_every_cell(page->stackPanel()->list());
  std::printf("opening the views of a 40 MB frame name added %.1f MiB to the peak\n", double(peak_added(base)) / 1024);
  EXPECT_LT(peak_added(base), kHugeNameBudgetKiB);
}

// Ctrl+C in the stack list under a snapshot's table copies the current frame whole, as the
// tables above it copy a cell, not the prefix its row shows.
TEST(GuiHugeNameWindowTest, CtrlCInATablesStackListCopiesTheWholeFrame) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  QTemporaryDir dir;
  const std::string huge = "huge_name_" + std::string(1'000'000, 'x');
  const QString path = dir.filePath("huge_frame.json");
  std::ofstream(path.toStdString()) << testing::snapshot_json({"train_step", huge});
  MainWindow w;
  w.show();
  w.openFile(path);
  ASSERT_TRUE(wait_for(&w, SIGNAL(snapshotShown()))) << w.lastError().toStdString();
  SnapshotPage* page = w.snapshotPage();
  int copied_rows = 0;
  for (RecordTablePage* table : {page->traceTable(), page->blockTable()}) {
    page->tabs()->setCurrentWidget(table);
    table->table()->selectRow(1);  // the allocation from the huge frame: the list shows its stack
    QApplication::processEvents();
    QListView* list = table->stackView();
    const int user = table->stackModel()->userRow();
    ASSERT_GE(user, 0);
    ASSERT_EQ(list->model()->index(user, 0).data().toString().size(), kMaxLabelChars + 1 + QStringLiteral(" (train.py:13)").size())
        << "the row shows a prefix";
    QApplication::clipboard()->clear();
    list->setFocus();
    list->setCurrentIndex(list->model()->index(user, 0));
    QTest::keyClick(list, Qt::Key_C, Qt::ControlModifier);
    const QString copied = QApplication::clipboard()->text();
    EXPECT_EQ(copied.size(), qsizetype(huge.size() + std::string(" (train.py:13)").size()));
    EXPECT_TRUE(copied.toStdString() == huge + " (train.py:13)") << copied.left(80).toStdString();
    ++copied_rows;
  }
  EXPECT_EQ(copied_rows, 2);
}

// Ctrl+C on an arg's key in the event details copies the whole key, not the prefix its cell
// shows.
TEST(GuiHugeNameWindowTest, CtrlCInTheDetailsCopiesAWholeArgKey) {
  if (const std::string problem = display_problem(); !problem.empty()) GTEST_SKIP() << problem;
  ensure_app();
  QTemporaryDir dir;
  const std::string key = "key_" + std::string(1'000'000, 'k');
  const QString path = dir.filePath("huge_key.json");
  std::ofstream(path.toStdString()) << testing::huge_key_trace(key);
  MainWindow w;
  w.show();
  TracePage* page = open_trace(w, path);
  ASSERT_NE(page, nullptr) << w.lastError().toStdString();
  page->searchBox()->setText("keyed_kernel");
  ASSERT_TRUE(page->findNext());
  auto* details = qobject_cast<QTableView*>(page->panels()->widget(0));
  ASSERT_NE(details, nullptr);
  page->panels()->setCurrentWidget(details);
  int copied_rows = 0;
  for (int r = 0; r < details->model()->rowCount(); ++r) {
    if (details->model()->index(r, EventDetailsModel::Value).data().toString() != "key_value") continue;
    QApplication::clipboard()->clear();
    details->setFocus();
    details->setCurrentIndex(details->model()->index(r, EventDetailsModel::Field));
    QTest::keyClick(details, Qt::Key_C, Qt::ControlModifier);
    const QString copied = QApplication::clipboard()->text();
    EXPECT_EQ(copied.size(), qsizetype(key.size()));
    EXPECT_TRUE(copied.toStdString() == key) << copied.left(80).toStdString();
    ++copied_rows;
  }
  EXPECT_EQ(copied_rows, 1);
}

}  // namespace
}  // namespace cudascope::gui
