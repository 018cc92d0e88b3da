// The Qt models, headless (QT_QPA_PLATFORM=offscreen is not even needed: QtCore only),
// each under QAbstractItemModelTester, with their figures checked against Python's.
#include "snapshot_test_support.h"
#include "stack_frames_fixture.h"

#include <cudascope/gui/block_table_model.h>
#include <cudascope/gui/compare_model.h>
#include <cudascope/gui/event_details_model.h>
#include <cudascope/gui/figures_model.h>
#include <cudascope/gui/file_kind.h>
#include <cudascope/gui/range_summary_model.h>
#include <cudascope/gui/segment_table_model.h>
#include <cudascope/gui/snapshot_loader.h>
#include <cudascope/gui/stack_model.h>
#include <cudascope/gui/trace_loader.h>
#include <cudascope/gui/trace_table_model.h>

#include <QAbstractItemModelTester>
#include <QCoreApplication>
#include <QEventLoop>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTimer>

#include <fstream>

namespace cudascope::gui {
namespace {

using analysis::testing::data_path;
using analysis::testing::expected_stats;

std::shared_ptr<const LoadedSnapshot> load(const char* name) {
  return index_snapshot(analysis::testing::load_fixture(name));
}

// Fatal mode: a broken model contract aborts the test run.
template <typename Model>
void tester(Model* model) {
  new QAbstractItemModelTester(model, QAbstractItemModelTester::FailureReportingMode::Fatal, model);
}

TEST(GuiModelTest, TraceTableRowsSortAndFilter) {
  auto loaded = load("snap_transformer_p4.pickle.gz");
  TraceTableModel model;
  tester(&model);
  model.setSnapshot(loaded);
  const auto want = expected_stats("snap_transformer.stats.json");
  EXPECT_EQ(model.rowCount(), want["trace_entries"].get<int>());
  EXPECT_EQ(model.columnCount(), TraceTableModel::ColumnCount);

  model.sort(TraceTableModel::Size, Qt::DescendingOrder);
  for (int r = 1; r < model.rowCount(); r += 97)
    ASSERT_GE(model.index(r - 1, TraceTableModel::Size).data(Qt::UserRole).toULongLong(),
              model.index(r, TraceTableModel::Size).data(Qt::UserRole).toULongLong());

  RecordFilter f;
  f.action = int(analysis::Action::alloc);
  model.setFilter(f);
  EXPECT_EQ(model.rowCount(), want["actions"]["alloc"].get<int>());
  f.min_size = 1 << 20;
  model.setFilter(f);
  for (int r = 0; r < model.rowCount(); ++r)
    ASSERT_GE(model.index(r, TraceTableModel::Size).data(Qt::UserRole).toULongLong(), 1u << 20);
  f = RecordFilter{};
  f.frame_text = "multi_head_attention_forward";
  model.setFilter(f);
  EXPECT_GT(model.rowCount(), 0);
  for (int r = 0; r < model.rowCount(); r += 13)
    EXPECT_TRUE(model.index(r, 0).data(Qt::ToolTipRole).toString().contains("multi_head_attention_forward"));
}

TEST(GuiModelTest, BlockAndSegmentTablesAndAddressSearch) {
  auto loaded = load("snap_transformer_p4.pickle.gz");
  BlockTableModel blocks;
  SegmentTableModel segments;
  tester(&blocks);
  tester(&segments);
  blocks.setSnapshot(loaded);
  segments.setSnapshot(loaded);
  const auto want = expected_stats("snap_transformer.stats.json");
  EXPECT_EQ(blocks.rowCount(), want["blocks"].get<int>());
  EXPECT_EQ(segments.rowCount(), want["segments"].get<int>());
  uint64_t reserved = 0, allocated = 0;
  for (int r = 0; r < segments.rowCount(); ++r) {
    reserved += segments.index(r, SegmentTableModel::Total).data(Qt::UserRole).toULongLong();
    allocated += segments.index(r, SegmentTableModel::Allocated).data(Qt::UserRole).toULongLong();
  }
  EXPECT_EQ(reserved, want["reserved_bytes"].get<uint64_t>());
  EXPECT_EQ(allocated, want["allocated_bytes"].get<uint64_t>());

  // An address inside a block finds that block, and the segment holding it.
  const auto& b = loaded->snapshot->blocks[17];
  const int row = blocks.findAddress(b.address + b.size / 2);
  ASSERT_GE(row, 0);
  EXPECT_EQ(blocks.recordAt(row), 17u);
  const int seg_row = segments.findAddress(b.address);
  ASSERT_GE(seg_row, 0);
  EXPECT_EQ(segments.recordAt(seg_row), b.segment);

  RecordFilter f;
  f.action = int(analysis::BlockState::inactive);
  blocks.setFilter(f);
  uint64_t inactive = 0;
  for (int r = 0; r < blocks.rowCount(); ++r) inactive += blocks.index(r, BlockTableModel::Size).data(Qt::UserRole).toULongLong();
  EXPECT_EQ(inactive, want["inactive_bytes"].get<uint64_t>());
  blocks.sort(BlockTableModel::Size, Qt::DescendingOrder);
  EXPECT_EQ(blocks.index(0, BlockTableModel::Size).data(Qt::UserRole).toULongLong(), want["largest_free_block"].get<uint64_t>());
}

TEST(GuiModelTest, StackFiguresAndCompareModels) {
  auto loaded = load("snap_transformer_p4.pickle.gz");
  StackModel stack;
  tester(&stack);
  const auto& first = loaded->snapshot->trace.front();
  stack.setStack(loaded, first.stack);
  const auto top = expected_stats("snap_transformer.stats.json")["first_entry_top_frame"];
  ASSERT_GT(stack.rowCount(), 0);
  EXPECT_EQ(stack.index(0).data().toString().toStdString(),
            top["name"].get<std::string>() + " (" + top["filename"].get<std::string>() + ":" + std::to_string(top["line"].get<int>()) + ")");

  FiguresModel figures;
  tester(&figures);
  figures.setFigures(loaded->figures);
  bool found = false;
  for (int r = 0; r < figures.rowCount(); ++r)
    if (figures.index(r, 0).data().toString() == "Reserved") {
      EXPECT_EQ(figures.index(r, 1).data(Qt::UserRole).toULongLong(),
                expected_stats("snap_transformer.stats.json")["reserved_bytes"].get<uint64_t>());
      found = true;
    }
  EXPECT_TRUE(found);

  CompareModel compare;
  tester(&compare);
  auto small = load("snap_small_p5.pickle");
  compare.setComparison(analysis::compare_snapshots(*small->snapshot, *loaded->snapshot));
  ASSERT_GT(compare.rowCount(), 0);
  qlonglong sum = 0;
  for (int r = 0; r < compare.rowCount(); ++r) sum += compare.index(r, CompareModel::Delta).data(Qt::UserRole).toLongLong();
  EXPECT_EQ(sum, qlonglong(loaded->figures.active_bytes) - qlonglong(small->figures.active_bytes));
}

TEST(GuiModelTest, FrameColumnsShowTheUserFrameAndTheFilterMatchesWhatTheyShow) {
  auto loaded = index_snapshot(analysis::testing::cpp_stack_snapshot());
  TraceTableModel trace;
  tester(&trace);
  trace.setSnapshot(loaded);
  ASSERT_EQ(trace.rowCount(), 3);
  EXPECT_EQ(trace.index(1, TraceTableModel::Frame).data().toString(), "train_step (train.py:12)");
  EXPECT_EQ(trace.index(2, TraceTableModel::Frame).data().toString(), "");  // only allocator frames
  const QString tip = trace.index(1, 0).data(Qt::ToolTipRole).toString();
  EXPECT_TRUE(tip.startsWith("at::TensorBase")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("train_step (train.py:12)"));
  EXPECT_TRUE(tip.contains("7 frames of the allocator and unwinder hidden")) << tip.toStdString();
  EXPECT_FALSE(tip.contains("CUDACachingAllocator"));

  // The filter takes the "file:line" the column shows, in any case.
  RecordFilter f;
  f.frame_text = "Train.py:12";
  trace.setFilter(f);
  EXPECT_EQ(trace.rowCount(), 2);  // segment_alloc and the first alloc
  f.frame_text = "CUDACachingAllocator";
  trace.setFilter(f);
  EXPECT_EQ(trace.rowCount(), 0);
  trace.setFilter(RecordFilter{});
  EXPECT_EQ(trace.findFrameText("train.py:40"), 0);
  EXPECT_EQ(trace.findFrameText("train.py:40", 0), 1);
  EXPECT_EQ(trace.findFrameText("train.py:40", 1), -1);

  BlockTableModel blocks;
  tester(&blocks);
  blocks.setSnapshot(loaded);
  EXPECT_EQ(blocks.index(0, BlockTableModel::Frame).data().toString(), "train_step (train.py:12)");

  StackModel stack;
  tester(&stack);
  stack.setStack(loaded, loaded->snapshot->trace[1].stack);
  ASSERT_EQ(stack.rowCount(), 4);
  EXPECT_EQ(stack.hiddenCount(), 7);
  EXPECT_EQ(stack.index(2).data().toString(), "train_step (train.py:12)");
  EXPECT_TRUE(stack.index(2).data(Qt::UserRole).toBool());
  EXPECT_FALSE(stack.index(0).data(Qt::UserRole).toBool());
  stack.setShowHidden(true);
  ASSERT_EQ(stack.rowCount(), 11);
  EXPECT_EQ(stack.hiddenCount(), 0);
  EXPECT_EQ(stack.index(0).data().toString(), "torch::unwind::unwind() (??:0)");
}

TEST(GuiModelTest, LoaderRunsOffThreadAndReportsErrorsAndCancel) {
  int argc = 1;
  char arg0[] = "gui_model_test";
  char* argv[] = {arg0, nullptr};
  QCoreApplication app(argc, argv);
  SnapshotLoader loader;
  std::shared_ptr<const LoadedSnapshot> result;
  QString error;
  bool was_cancelled = false;
  std::vector<int> progress;
  QEventLoop loop;
  QObject::connect(&loader, &SnapshotLoader::progress, [&](int p) { progress.push_back(p); });
  QObject::connect(&loader, &SnapshotLoader::loaded, [&](auto r, const QString&) { result = r; loop.quit(); });
  QObject::connect(&loader, &SnapshotLoader::failed, [&](const QString& m, bool c) { error = m; was_cancelled = c; loop.quit(); });
  QTimer::singleShot(30000, &loop, &QEventLoop::quit);

  loader.start(QString::fromStdString(data_path("snap_transformer_p2.pickle.gz")));
  EXPECT_TRUE(loader.busy());
  loop.exec();
  ASSERT_TRUE(result) << error.toStdString();
  EXPECT_EQ(result->figures.trace_entries, expected_stats("snap_transformer.stats.json")["trace_entries"].get<uint64_t>());
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), 1000);

  result.reset();
  loader.start(QString::fromStdString(data_path("snap_bad_size_type.pickle")));
  loop.exec();
  EXPECT_FALSE(result);
  EXPECT_FALSE(was_cancelled);
  EXPECT_TRUE(error.contains("snap_bad_size_type.pickle: byte 13109:")) << error.toStdString();

  loader.start(QString::fromStdString(data_path("snap_transformer_p2.pickle.gz")));
  loader.cancel();
  loop.exec();
  EXPECT_TRUE(was_cancelled) << error.toStdString();
  EXPECT_FALSE(result);
}

QString qdata(const char* name) { return QString::fromStdString(data_path(name)); }

std::unique_ptr<TraceDocument> open_trace(const QString& path) {
  QString error;
  bool cancelled = false;
  auto loaded = load_trace_for_view(path, {}, error, cancelled);
  EXPECT_TRUE(loaded) << error.toStdString();
  return loaded ? std::make_unique<TraceDocument>(path, std::move(loaded)) : nullptr;
}

TEST(GuiModelTest, FilesAreToldApartByContent) {
  EXPECT_EQ(sniff_file(qdata("snap_transformer_p4.pickle.gz")).kind, FileKind::snapshot);
  EXPECT_EQ(sniff_file(qdata("snap_small.json")).kind, FileKind::snapshot);
  EXPECT_EQ(sniff_file(qdata("trace_golden.json")).kind, FileKind::trace);
  EXPECT_EQ(sniff_file(qdata("kineto_train_h100_s3.json.gz")).kind, FileKind::trace);
  EXPECT_EQ(sniff_bytes("  [{\"ph\":\"X\"}]"), FileKind::trace);  // Chrome's bare array form
  EXPECT_EQ(sniff_bytes("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[]}"), FileKind::trace);
  EXPECT_EQ(sniff_bytes("{\"device_traces\":[], \"segments\":[]}"), FileKind::snapshot);
  EXPECT_EQ(sniff_bytes("hello"), FileKind::unknown);
  EXPECT_FALSE(sniff_file("/nonexistent/trace.json").error.isEmpty());
}

TEST(GuiModelTest, EventDetailsShowCudaFieldsAndFlows) {
  auto doc = open_trace(qdata("trace_golden.json"));
  ASSERT_TRUE(doc);
  const auto& m = doc->model();
  quint32 kernel = UINT32_MAX, launch = UINT32_MAX;
  for (quint32 i = 0; i < m.event_count(); ++i) {
    if (m.name(m.event(i)) == "add_kernel(float*, float*, int)") kernel = i;
    if (m.name(m.event(i)) == "cudaLaunchKernel") launch = i;
  }
  ASSERT_NE(kernel, UINT32_MAX);
  EventDetailsModel details;
  tester(&details);
  details.setEvent(doc.get(), kernel);
  EXPECT_EQ(details.value("Name"), "add_kernel(float*, float*, int)");
  EXPECT_EQ(details.value("Duration"), "10.25 us");
  EXPECT_EQ(details.value("Correlation"), "7");
  EXPECT_EQ(details.value("Grid"), "[64, 1, 1]");
  EXPECT_EQ(details.value("Block"), "[256, 1, 1]");
  EXPECT_EQ(details.value("registers per thread"), "24");
  EXPECT_TRUE(details.value("Flow from").startsWith("cudaLaunchKernel"));
  // The flow row points at the launch: the view jumps there on double-click.
  bool found = false;
  for (int r = 0; r < details.rowCount(); ++r)
    if (details.index(r, 0).data().toString() == "Flow from") {
      EXPECT_EQ(details.index(r, 0).data(Qt::UserRole).toUInt(), launch);
      found = true;
    }
  EXPECT_TRUE(found);
  details.setEvent(doc.get(), EventDetailsModel::kNone);
  EXPECT_EQ(details.rowCount(), 0);
  EXPECT_EQ(formatDuration(812), "812 ns");
  EXPECT_EQ(formatDuration(4560000), "4.560 ms");
}

TEST(GuiModelTest, RangeSummaryTableListsStreamsKernelsAndRanges) {
  auto doc = open_trace(qdata("trace_golden.json"));
  ASSERT_TRUE(doc);
  RangeSummaryModel summary;
  tester(&summary);
  summary.setSummary(analysis::summarize_range(doc->model(), doc->index(), doc->index().begin_ns(), doc->index().end_ns()));
  ASSERT_EQ(summary.rowCount(), 4);  // stream 7, add_kernel, then the ranges "step 0" and "left open"
  EXPECT_EQ(summary.index(0, RangeSummaryModel::Kind).data().toString(), "stream");
  EXPECT_EQ(summary.index(0, RangeSummaryModel::Count).data(Qt::UserRole).toULongLong(), 2u);
  EXPECT_EQ(summary.index(1, RangeSummaryModel::Kind).data().toString(), "kernel");
  EXPECT_EQ(summary.index(1, RangeSummaryModel::Total).data(Qt::UserRole).toLongLong(), 10250);
  EXPECT_EQ(summary.index(2, RangeSummaryModel::Kind).data().toString(), "range");
  EXPECT_EQ(summary.index(2, RangeSummaryModel::Name).data().toString(), "step 0");  // the longer one first
  EXPECT_EQ(summary.index(3, RangeSummaryModel::Name).data().toString(), "left open");
  summary.clear();
  EXPECT_EQ(summary.rowCount(), 0);
}

TEST(GuiModelTest, FollowModeTakesInOnlyWhatTheFileGained) {
  int argc = 1;
  char arg0[] = "gui_model_test";
  char* argv[] = {arg0, nullptr};
  QCoreApplication app(argc, argv);  // the follow timer needs an event dispatcher
  // Our golden trace, written in two steps as `cudascope run` streams it.
  std::ifstream in(data_path("trace_golden.json"));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  ASSERT_GT(lines.size(), 12u);
  QTemporaryDir dir;
  const QString path = dir.filePath("growing.json");
  auto write = [&](size_t from, size_t to, std::ios::openmode mode) {
    std::ofstream out(path.toStdString(), mode);
    for (size_t i = from; i < to; ++i) out << lines[i];
  };
  write(0, 9, std::ios::trunc);  // header, metadata, the NVTX range's start and the launch
  auto doc = open_trace(path);
  ASSERT_TRUE(doc);
  EXPECT_TRUE(doc->canFollow());
  EXPECT_TRUE(doc->following()) << "an unfinished trace is followed";
  const size_t before = doc->model().event_count();
  const size_t rows_before = doc->index().rows().size();
  QSignalSpy grew(doc.get(), &TraceDocument::grew);
  write(9, lines.size(), std::ios::app);
  const long long added = doc->pollOnce();
  EXPECT_GT(added, 0);
  EXPECT_EQ(grew.count(), 1);
  EXPECT_EQ(doc->model().event_count(), before + size_t(added));
  auto whole = open_trace(qdata("trace_golden.json"));
  EXPECT_EQ(doc->model().event_count(), whole->model().event_count());
  EXPECT_EQ(doc->index().rows().size(), whole->index().rows().size());
  EXPECT_GT(doc->index().rows().size(), rows_before) << "the stream's row appears once its kernel arrives";
  EXPECT_EQ(doc->search().find({"add_kernel", false, false}).count, 1u) << "search sees the new events";
  EXPECT_FALSE(doc->following()) << "a finished trace stops being polled";
}

TEST(GuiModelTest, TraceLoaderRunsOffThreadWithProgress) {
  int argc = 1;
  char arg0[] = "gui_model_test";
  char* argv[] = {arg0, nullptr};
  QCoreApplication app(argc, argv);
  TraceLoader loader;
  std::unique_ptr<TraceDocument> doc;
  QString error;
  std::vector<int> progress;
  QEventLoop loop;
  QObject::connect(&loader, &TraceLoader::progress, [&](int p) { progress.push_back(p); });
  QObject::connect(&loader, &TraceLoader::loaded, [&](TraceDocument* d) { doc.reset(d); loop.quit(); });
  QObject::connect(&loader, &TraceLoader::failed, [&](const QString& m, bool) { error = m; loop.quit(); });
  QTimer::singleShot(30000, &loop, &QEventLoop::quit);
  loader.start(qdata("kineto_train_h100_s3.json.gz"));
  loop.exec();
  ASSERT_TRUE(doc) << error.toStdString();
  EXPECT_EQ(doc->model().event_count(), expected_stats("kineto_train_h100_s3.expect.json")["events"].get<size_t>());
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back(), 1000);
  EXPECT_TRUE(doc->canFollow()) << "a gzip trace can be followed too";
  EXPECT_FALSE(doc->following()) << "a finished trace is not polled";

  loader.start(qdata("snap_small.json"));  // a snapshot is not a trace: a clear error
  loop.exec();
  EXPECT_FALSE(error.isEmpty());
}

}  // namespace
}  // namespace cudascope::gui
