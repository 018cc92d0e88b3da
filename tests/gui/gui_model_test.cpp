// The Qt models, headless (QT_QPA_PLATFORM=offscreen is not even needed: QtCore only),
// each under QAbstractItemModelTester, with their figures checked against Python's.
#include "huge_name_inputs.h"
#include "nccl_rank_traces.h"
#include "snapshot_test_support.h"
#include "stack_frames_fixture.h"

#include <cudascope/gui/allocator_states.h>
#include <cudascope/gui/block_table_model.h>
#include <cudascope/gui/capped_text.h>
#include <cudascope/gui/compare_model.h>
#include <cudascope/gui/event_details_model.h>
#include <cudascope/gui/figures_model.h>
#include <cudascope/gui/file_kind.h>
#include <cudascope/gui/rank_timeline.h>
#include <cudascope/gui/range_summary_model.h>
#include <cudascope/gui/segment_table_model.h>
#include <cudascope/gui/snapshot_loader.h>
#include <cudascope/gui/snapshot_selection.h>
#include <cudascope/gui/stack_model.h>
#include <cudascope/analysis/cpp_names.h>
#include <cudascope/analysis/loader.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/gui/trace_loader.h>
#include <cudascope/gui/trace_table_model.h>

#include <QAbstractItemModelTester>
#include <QCoreApplication>
#include <QEventLoop>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <QDateTime>
#include <QFile>
#include <QFileInfo>
#include <QLocale>
#include <QSortFilterProxyModel>

#include <zlib.h>

#include <cstdio>
#include <chrono>
#include <fstream>
#include <random>

namespace cudascope::gui {
namespace {

using analysis::testing::data_path;
using analysis::testing::expected_stats;
using testing::huge_key_trace;
using testing::huge_name_trace;
using testing::snapshot_json;

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

// The allocator-state tab's replay, through the model: the range, the final state (the only
// one that knows requested sizes) and the line describing each state.
TEST(GuiModelTest, AllocatorStatesReplayEveryEntryAndDescribeIt) {
  auto loaded = load("snap_transformer_p4.pickle.gz");
  AllocatorStates states(loaded);
  ASSERT_LT(states.firstEntry(), states.lastEntry());
  EXPECT_FALSE(states.hasEntry(states.firstEntry() - 1));
  EXPECT_TRUE(states.hasEntry(states.lastEntry()));

  const auto before = states.stateAfter(states.firstEntry() - 1);
  EXPECT_EQ(before.entry, states.firstEntry() - 1);
  EXPECT_FALSE(states.isFinal(before));
  EXPECT_EQ(states.describe(before), "Before the first trace entry");

  const auto first = states.stateAfter(states.firstEntry());
  const auto& entry = loaded->snapshot->trace[std::size_t(first.entry)];
  const auto action = analysis::action_name(entry.action);
  EXPECT_TRUE(states.describe(first).startsWith(QString::fromUtf8(action.data(), int(action.size())) + "  " +
                                                formatAddress(entry.addr)))
      << states.describe(first).toStdString();
  EXPECT_TRUE(states.describe(first).contains(" at 0.000 ms")) << "times count from the first entry";

  const auto last = states.stateAfter(states.lastEntry() + 100);
  EXPECT_EQ(last.entry, states.lastEntry()) << "clamped to the last entry";
  EXPECT_TRUE(states.isFinal(last));
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
  EXPECT_TRUE(tip.startsWith("at::detail::_empty_generic\n")) << tip.toStdString();  // shortened
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
  EXPECT_EQ(stack.index(0).data().toString(), "torch::unwind::unwind");
  EXPECT_EQ(stack.index(0).data(Qt::ToolTipRole).toString(), "torch::unwind::unwind() (??:0)");
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

// --- Several rank traces as one timeline (rank_timeline.h) ---

// A rank's trace: a host process (pid 4242 on both ranks) with a cpu_op and a launch flow,
// GPU 0 with a compute kernel and three all-reduces (one by name, one by its args mark).
// `shift_ns` moves everything, as a host clock that differs; `jitter_ns` is added to the
// second collective's end only.
std::string rank_trace(int rank, const std::string& host, std::int64_t shift_ns, std::int64_t jitter_ns = 0) {
  auto us = [&](std::int64_t ns) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld.%03lld", (long long)((ns + shift_ns) / 1000), (long long)((ns + shift_ns) % 1000));
    return std::string(buf);
  };
  auto dur = [](std::int64_t ns) { return std::to_string(ns / 1000) + "." + std::to_string(ns % 1000 + 1000).substr(1); };
  std::string t = "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"H100\"}],\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":" +
                  std::to_string(rank) + ",\"world_size\":2" + (host.empty() ? "" : ",\"host\":\"" + host + "\"") +
                  "},\"traceEvents\":[\n";
  t += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":4242,\"tid\":0,\"args\":{\"name\":\"python train.py\"}},\n";
  t += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"GPU 0\"}},\n";
  t += "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm rank" + std::to_string(rank) + "\",\"pid\":4242,\"tid\":4242,\"ts\":" + us(1'000'000) + ",\"dur\":20.000},\n";
  t += "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":4242,\"tid\":4242,\"ts\":" + us(1'002'000) + ",\"dur\":5.000},\n";
  t += "{\"ph\":\"s\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":7,\"pid\":4242,\"tid\":4242,\"ts\":" + us(1'002'000) + "},\n";
  t += "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm_kernel\",\"pid\":0,\"tid\":7,\"ts\":" + us(1'010'000) + ",\"dur\":30.000},\n";
  t += "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":7,\"pid\":0,\"tid\":7,\"ts\":" + us(1'010'000) + "},\n";
  // All-reduces: each rank starts them at its own time, they all end together (on rank 0's clock).
  const std::int64_t ends[] = {1'100'000, 1'200'000, 1'300'000};
  for (int k = 0; k < 3; ++k) {
    const std::int64_t start = ends[k] - 40'000 - rank * 7'000;
    const std::int64_t end = ends[k] + (k == 1 ? jitter_ns : 0);
    t += std::string("{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"") + (k == 2 ? "all_reduce_custom" : "ncclDevKernel_AllReduce_Sum_f32") +
         "\",\"pid\":0,\"tid\":13,\"ts\":" + us(start) + ",\"dur\":" + dur(end - start) + ",\"args\":{\"communication\":true}}" +
         (k == 2 ? "\n" : ",\n");
  }
  t += "]}\n";
  return t;
}

QString write_file(const QTemporaryDir& dir, const QString& name, const std::string& text) {
  const QString path = dir.filePath(name);
  std::ofstream(path.toStdString()) << text;
  return path;
}

struct RankDocs {
  std::vector<std::unique_ptr<TraceDocument>> docs;
  QStringList errors;
};
RankDocs open_together(const QStringList& paths) {
  RankDocs out;
  bool cancelled = false;
  for (auto& d : load_traces_for_view(paths, {}, out.errors, cancelled))
    out.docs.push_back(std::make_unique<TraceDocument>(d.path, std::move(d.trace)));
  return out;
}

// The first event named `name` in the document's model.
const analysis::TraceModel::Event* find_event(const TraceDocument& doc, std::string_view name) {
  const auto& m = doc.model();
  for (std::size_t i = 0; i < m.event_count(); ++i)
    if (m.name(m.event(i)) == name) return &m.event(i);
  return nullptr;
}

TEST(GuiModelTest, RankTracesOfDifferentHostsOpenAsOneAlignedTimeline) {
  QTemporaryDir dir;
  // Rank 1's host clock runs 2.5 ms ahead of rank 0's; given first, the timeline still starts at rank 0.
  const QString r1 = write_file(dir, "trace_1.json", rank_trace(1, "node-b", 2'500'000));
  const QString r0 = write_file(dir, "trace_0.json", rank_trace(0, "node-a", 0));
  auto opened = open_together({r1, r0});
  ASSERT_TRUE(opened.errors.isEmpty()) << opened.errors.join("; ").toStdString();
  ASSERT_EQ(opened.docs.size(), 1u) << "two ranks, one timeline";
  TraceDocument& doc = *opened.docs.front();
  EXPECT_TRUE(doc.isRankTimeline());
  EXPECT_FALSE(doc.canFollow());
  EXPECT_EQ(doc.model().format, analysis::TraceFormat::kineto) << "Kineto traces merge into a Kineto timeline";
  EXPECT_EQ(doc.displayName(), "ranks 0-1 (2 traces)");
  EXPECT_EQ(doc.paths(), (QStringList{r0, r1}));

  const auto& ranks = doc.rankGroups();
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].rank, 0);
  EXPECT_EQ(ranks[0].label(), "rank 0 (node-a)");
  EXPECT_EQ(ranks[0].clock, RankGroup::Clock::reference);
  EXPECT_EQ(ranks[1].clock, RankGroup::Clock::aligned);
  EXPECT_EQ(ranks[1].alignment.offset_ns, -2'500'000) << "the known offset is recovered";
  // The ends agree exactly, but only the parts' overlap bounds the offset: rank 0's parts are
  // 40 us long, rank 1's 47 us, so it lies within [-2540, -2453] us.
  EXPECT_EQ(ranks[1].alignment.error_ns, 47'000);
  EXPECT_EQ(ranks[1].alignment.collectives, 3) << "nccl* by name and \"communication\": true";
  EXPECT_EQ(ranks[1].clockText(), "rank 1 aligned to rank 0: offset -2500.000 us ± 47.000 us (3 collectives paired by order)");
  EXPECT_EQ(ranks[1].pairingText(), "collectives paired by order (the traces do not all name their process groups)");

  // Both ranks' events, rank 1's on rank 0's clock.
  const auto* mm0 = find_event(doc, "aten::mm rank0");
  const auto* mm1 = find_event(doc, "aten::mm rank1");
  ASSERT_TRUE(mm0 && mm1);
  EXPECT_EQ(mm0->ts_ns, 1'000'000);
  EXPECT_EQ(mm1->ts_ns, 1'000'000) << "rank 1 shifted back by the offset";
  const auto& m = doc.model();
  EXPECT_EQ(m.event_count(), 2 * (10u + 3u)) << "each rank's 10 events and its processes' places and GPU label";

  // Rows: rank 0's processes (host, GPU) under its group, then rank 1's; every row has a rank.
  const auto& rows = doc.index().rows();
  std::vector<int> headers_group;
  std::vector<std::string> header_labels;
  for (quint32 r = 0; r < rows.size(); ++r) {
    ASSERT_GE(doc.rankGroupOfRow(r), 0) << rows[r].label;
    if (rows[r].kind == analysis::TimelineRow::Kind::process) {
      headers_group.push_back(doc.rankGroupOfRow(r));
      header_labels.push_back(rows[r].label);
    }
    if (r > 0) {
      EXPECT_LE(doc.rankGroupOfRow(r - 1), doc.rankGroupOfRow(r)) << "grouped, ordered by rank";
    }
  }
  EXPECT_EQ(headers_group, (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(header_labels, (std::vector<std::string>{"GPU 0", "python train.py (4242)", "GPU 0", "python train.py (20004242)"}));
  std::size_t gpu_rows = 0;
  for (const auto& row : rows) gpu_rows += row.kind == analysis::TimelineRow::Kind::slices && row.gpu;
  EXPECT_EQ(gpu_rows, 4u) << "each rank's GPU keeps its streams";

  // Flows stay within their rank although both used id 7.
  ASSERT_EQ(m.flows().size(), 2u);
  for (const auto& f : m.flows()) {
    ASSERT_NE(f.from_slice, analysis::kNoEvent);
    ASSERT_NE(f.to_slice, analysis::kNoEvent);
    const auto from_process = m.tracks()[m.event(f.from_slice).track].process;
    const auto to_process = m.tracks()[m.event(f.to_slice).track].process;
    EXPECT_NE(from_process, to_process);
    const int from_group = doc.rankGroupOfRow(doc.index().row_of_track(m.event(f.from_slice).track));
    const int to_group = doc.rankGroupOfRow(doc.index().row_of_track(m.event(f.to_slice).track));
    EXPECT_EQ(from_group, to_group);
  }
  EXPECT_EQ(doc.search().find({"gemm_kernel", false, false}).count, 2u);

  // Ends that agree only to within 3 us on one of three collectives: the spread says so, the
  // deviation (0, 3 us, 0) does not, and the overlap bounds are as before.
  const QString j1 = write_file(dir, "jitter_1.json", rank_trace(1, "node-b", 2'500'000, 3'000));
  auto jittered = open_together({r0, j1});
  ASSERT_EQ(jittered.docs.size(), 1u);
  const auto& a = jittered.docs.front()->rankGroups()[1].alignment;
  EXPECT_EQ(a.offset_ns, -2'500'000);
  EXPECT_EQ(a.error_ns, 47'000);
  EXPECT_EQ(a.spread_ns, 3'000);
}

// A rank of tensor-parallel pairs {0,1},{2,3} and data-parallel pairs {0,2},{1,3}, each on its
// own host: NCCL kernels naming their group and sequence number (as torch.profiler's do), the
// pairs {2,3} broadcasting on their group before each step (so the k-th kernels of rank 0
// and rank 2 are different operations). Every operation ends at one instant of rank 0's
// clock, which this host's runs `shift_ns` ahead of.
std::string tp_dp_rank_trace(int rank, std::int64_t shift_ns) {
  auto us = [](std::int64_t ns) { return std::to_string(ns / 1000) + "." + std::to_string(ns % 1000 + 1000).substr(1); };
  const std::string tp = rank < 2 ? "1" : "2", dp = rank % 2 == 0 ? "3" : "4";
  const std::string tp_members = rank < 2 ? "[0, 1]" : "[2, 3]", dp_members = rank % 2 == 0 ? "[0, 2]" : "[1, 3]";
  std::string t = "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"H100\"}],\"distributedInfo\":{\"backend\":"
                  "\"nccl\",\"rank\":" + std::to_string(rank) + ",\"world_size\":4,\"host\":\"node-" + std::to_string(rank) +
                  "\"},\"traceEvents\":[\n{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"GPU 0\"}}";
  std::map<std::string, int> seq;
  auto collective = [&](const std::string& group, const std::string& members, std::int64_t end_ns) {
    const std::int64_t start_ns = end_ns - 40'000 - rank * 7'000;
    t += ",\n{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ncclDevKernel_AllReduce_Sum_f32_RING_LL\",\"pid\":0,\"tid\":13,\"ts\":" +
         us(start_ns + shift_ns) + ",\"dur\":" + us(end_ns - start_ns) + ",\"args\":{\"Collective name\":\"allreduce\","
         "\"Process Group Name\":\"" + group + "\",\"Process Group Ranks\":\"" + members + "\",\"Seq\":" +
         std::to_string(++seq[group]) + "}}";
  };
  for (int step = 0; step < 3; ++step) {
    // Each group's operations end at instants of their own, so a wrong pair shows as an offset.
    const std::int64_t at = 10'000'000 + step * 1'000'000;
    if (rank >= 2) collective(tp, tp_members, at + 50'000);
    collective(tp, tp_members, at + (rank < 2 ? 100'000 : 130'000));
    collective(dp, dp_members, at + (rank % 2 == 0 ? 300'000 : 370'000));
  }
  return t + "\n]}\n";
}

TEST(GuiModelTest, RankClocksAlignOnCollectivesPairedByGroupAndSequence) {
  QTemporaryDir dir;
  const std::int64_t shifts[] = {0, 1'500'000, -700'000, 2'250'000};
  QStringList paths;
  for (int r = 0; r < 4; ++r)
    paths << write_file(dir, QStringLiteral("kineto_%1.json").arg(r), tp_dp_rank_trace(r, shifts[r]));
  auto opened = open_together(paths);
  ASSERT_TRUE(opened.errors.isEmpty()) << opened.errors.join("; ").toStdString();
  ASSERT_EQ(opened.docs.size(), 1u);
  const auto& ranks = opened.docs.front()->rankGroups();
  ASSERT_EQ(ranks.size(), 4u);
  for (int r = 1; r < 4; ++r) {
    EXPECT_EQ(ranks[r].clock, RankGroup::Clock::aligned) << r;
    EXPECT_EQ(ranks[r].alignment.offset_ns, -shifts[r]) << "rank " << r << ": " << ranks[r].clockText().toStdString();
    EXPECT_EQ(ranks[r].alignment.pairing, analysis::CollectivePairing::communicator_and_sequence);
  }
  // The ends agree exactly; the error is the parts' overlap (rank r's are 40 + 7r us long): rank 1
  // against rank 0 47 us, rank 2 54 us, rank 3 against rank 1 61 us plus rank 1's 47.
  EXPECT_EQ(ranks[1].alignment.error_ns, 47'000);
  EXPECT_EQ(ranks[2].alignment.error_ns, 54'000);
  EXPECT_EQ(ranks[3].alignment.error_ns, 108'000);
  EXPECT_EQ(ranks[1].alignment.collectives, 3) << "rank 0 and 1 share only their tensor-parallel group";
  EXPECT_EQ(ranks[2].alignment.collectives, 3) << "rank 0 and 2 share only their data-parallel group";
  EXPECT_EQ(ranks[3].alignment.via_rank, 1) << "rank 3 shares no group with rank 0";
  EXPECT_EQ(ranks[3].clockText(),
            "rank 3 aligned to rank 0 through rank 1: offset -2250.000 us ± 108.000 us (3 collectives paired by communicator "
            "and sequence number)");
  EXPECT_EQ(ranks[2].pairingText(), "collectives paired by communicator and sequence number: 2 ([2, 3]), 3 ([0, 2])");
  EXPECT_TRUE(ranks[0].headerText().endsWith("; " + ranks[0].pairingText())) << ranks[0].headerText().toStdString();
  EXPECT_EQ(ranks[2].headerText(), ranks[2].clockText() + "; communicators 2 ([2, 3]), 3 ([0, 2])") << "the rule once";

  // A kernel's details say how its collective is paired, and its key.
  TraceDocument& doc = *opened.docs.front();
  quint32 kernel = EventDetailsModel::kNone;
  for (quint32 i = 0; i < doc.model().event_count() && kernel == EventDetailsModel::kNone; ++i)
    if (doc.model().name(doc.model().event(i)).substr(0, 13) == "ncclDevKernel") kernel = i;
  EventDetailsModel details;
  tester(&details);
  details.setEvent(&doc, kernel);
  EXPECT_EQ(details.value("Paired across ranks by"), "communicator and sequence number (group 1, Seq 1; ranks 0, 1)");

  // By order, rank 2's first kernel (its pair's broadcast) would meet rank 0's first all-reduce.
  auto rank0 = analysis::load_trace_text(tp_dp_rank_trace(0, shifts[0]), "rank 0");
  auto rank2 = analysis::load_trace_text(tp_dp_rank_trace(2, shifts[2]), "rank 2");
  ASSERT_TRUE(rank0.ok() && rank2.ok());
  const auto order = analysis::align_on_paired_collectives(analysis::collectives_by_communicator(*rank0.model),
                                                           analysis::collectives_by_communicator(*rank2.model),
                                                           analysis::CollectivePairing::order);
  EXPECT_NE(order.offset_ns, -shifts[2]) << "order pairing gets rank 2's clock wrong";
}

// cudascope's own traces of four ranks (analysis/nccl_rank_traces.h: tensor-parallel pairs
// {0,1},{2,3}, data-parallel {0,2},{1,3}, each pair an NCCL communicator), merged: a kernel's
// details name its communicator, its place on it and the ranks sharing it. Every rank numbers
// its launches' correlation ids alike, so in the merged timeline a kernel is found only among
// its own rank's launches.
TEST(GuiModelTest, AnNcclKernelsDetailsNameItsCommunicatorAndItsPlaceOnIt) {
  QTemporaryDir dir;
  QStringList paths;
  for (const auto& rank : analysis::testing::nccl_job()) {
    paths << dir.filePath(QStringLiteral("r_%1.json").arg(rank.rank()));
    rank.write(paths.back().toStdString());
  }
  auto opened = open_together(paths);
  ASSERT_TRUE(opened.errors.isEmpty()) << opened.errors.join("; ").toStdString();
  ASSERT_EQ(opened.docs.size(), 1u);
  TraceDocument& doc = *opened.docs.front();
  ASSERT_EQ(doc.rankGroups().size(), 4u);
  EXPECT_EQ(doc.rankGroups()[0].pairing, analysis::CollectivePairing::nccl_communicator_and_order);

  // Each rank's NCCL kernels in start order.
  const auto& m = doc.model();
  std::vector<std::vector<quint32>> kernels(4);
  for (quint32 i = 0; i < m.event_count(); ++i) {
    if (m.cat(m.event(i)) != "kernel" || !m.name(m.event(i)).starts_with("ncclDevKernel")) continue;
    const int rank = doc.rankGroupOfEvent(i);
    ASSERT_TRUE(rank >= 0 && rank < 4) << "kernel " << i << " in rank group " << rank;
    kernels[size_t(rank)].push_back(i);
  }
  for (auto& k : kernels) std::sort(k.begin(), k.end(), [&](quint32 a, quint32 b) { return m.event(a).ts_ns < m.event(b).ts_ns; });
  ASSERT_EQ(kernels[2].size(), 8u);

  EventDetailsModel details;
  tester(&details);
  // Rank 2's sixth kernel: after a broadcast and two all-reduces on its tensor-parallel
  // communicator, its data-parallel all-reduce and another broadcast.
  details.setEvent(&doc, kernels[2][5]);
  EXPECT_EQ(details.value("Paired across ranks by").toStdString(),
            "NCCL communicator and order (communicator 0xf00dfacecafe0123, collective 5 of 6 on it; ranks 2, 3)");
  details.setEvent(&doc, kernels[0][5]);
  EXPECT_EQ(details.value("Paired across ranks by").toStdString(),
            "NCCL communicator and order (communicator 0x2222333344445555, collective 2 of 2 on it; ranks 0, 2)");
  details.setEvent(&doc, kernels[1][0]);
  EXPECT_EQ(details.value("Paired across ranks by").toStdString(),
            "NCCL communicator and order (communicator 0x1a2b3c4d5e6f7081, collective 1 of 4 on it; ranks 0, 1)");
  const quint32 range = kernels[1][0] == 0 ? 1 : 0;  // not a kernel: no pairing row
  details.setEvent(&doc, range);
  EXPECT_EQ(details.value("Paired across ranks by").toStdString(), "");
}

TEST(GuiModelTest, RankTracesOfOneHostShareOneClock) {
  QTemporaryDir dir;
  // One host: the recorded times are used as they are, even where collectives would say otherwise.
  const QString r0 = write_file(dir, "trace_0.json", rank_trace(0, "node-a", 0));
  const QString r1 = write_file(dir, "trace_1.json", rank_trace(1, "node-a", 2'500'000));
  auto opened = open_together({r0, r1});
  ASSERT_EQ(opened.docs.size(), 1u);
  TraceDocument& doc = *opened.docs.front();
  for (const auto& rank : doc.rankGroups()) {
    EXPECT_EQ(rank.clock, RankGroup::Clock::one_clock);
    EXPECT_EQ(rank.alignment.offset_ns, 0);
  }
  EXPECT_EQ(find_event(doc, "aten::mm rank1")->ts_ns, 3'500'000) << "offset 0";

  // Kineto-style traces without a host: one clock too.
  const QString k0 = write_file(dir, "k_0.json", rank_trace(0, "", 0));
  const QString k1 = write_file(dir, "k_1.json", rank_trace(1, "", 1'000));
  auto hostless = open_together({k0, k1});
  ASSERT_EQ(hostless.docs.size(), 1u);
  EXPECT_EQ(hostless.docs.front()->rankGroups()[1].clock, RankGroup::Clock::one_clock);
  EXPECT_EQ(hostless.docs.front()->rankGroups()[1].label(), "rank 1");
}

TEST(GuiModelTest, TracesWithoutDistinctRanksKeepATabEach) {
  QTemporaryDir dir;
  const QString r0 = write_file(dir, "trace_0.json", rank_trace(0, "node-a", 0));
  const QString again = write_file(dir, "again_0.json", rank_trace(0, "node-a", 0));
  const QString golden = qdata("trace_golden.json");  // rank 1, but of cudascope's format
  auto opened = open_together({r0, again, golden});
  ASSERT_EQ(opened.docs.size(), 3u) << "a rank twice: no merge; another format: its own tab";
  for (const auto& d : opened.docs) {
    EXPECT_FALSE(d->isRankTimeline());
    EXPECT_TRUE(d->canFollow());
    for (quint32 r = 0; r < d->index().rows().size(); ++r) EXPECT_EQ(d->rankGroupOfRow(r), -1);
  }
  EXPECT_EQ(opened.docs[0]->path(), r0);
  EXPECT_EQ(opened.docs[2]->path(), golden);

  // rank_sets() itself: only models of one format with distinct ranks.
  analysis::TraceModel a, b, c, none;
  a.rank = 0, b.rank = 1, c.rank = 2, none.rank = -1;
  c.format = analysis::TraceFormat::cudascope;
  const auto sets = rank_sets({&b, &none, &a, &c});
  ASSERT_EQ(sets.size(), 1u);
  EXPECT_EQ(sets[0], (std::vector<std::size_t>{2, 0}));

  // A file that cannot be read is named; the others still open.
  auto partial = open_together({r0, qdata("snap_small.json")});
  EXPECT_EQ(partial.docs.size(), 1u);
  EXPECT_EQ(partial.errors.size(), 1);
}

TEST(GuiModelTest, TraceLoaderOpensRankTracesTogether) {
  int argc = 1;
  char arg0[] = "gui_model_test";
  char* argv[] = {arg0, nullptr};
  QCoreApplication app(argc, argv);
  QTemporaryDir dir;
  const QString r0 = write_file(dir, "trace_0.json", rank_trace(0, "node-a", 0));
  const QString r1 = write_file(dir, "trace_1.json", rank_trace(1, "node-b", -40'000));
  TraceLoader loader;
  std::vector<std::unique_ptr<TraceDocument>> docs;
  QStringList errors;
  QEventLoop loop;
  QObject::connect(&loader, &TraceLoader::loaded, [&](TraceDocument* d) { docs.emplace_back(d); });
  QObject::connect(&loader, &TraceLoader::failed, [&](const QString& m, bool) { errors << m; });
  QObject::connect(&loader, &TraceLoader::finished, &loop, &QEventLoop::quit);
  QTimer::singleShot(30000, &loop, &QEventLoop::quit);
  loader.start(QStringList{r0, r1});
  loop.exec();
  ASSERT_TRUE(errors.isEmpty()) << errors.join("; ").toStdString();
  ASSERT_EQ(docs.size(), 1u);
  EXPECT_EQ(docs[0]->rankGroups()[1].alignment.offset_ns, 40'000);
  // The details of a merged event read like any other's (the model under the tester).
  EventDetailsModel details;
  tester(&details);
  const auto& m = docs[0]->model();
  for (quint32 i = 0; i < m.event_count(); ++i)
    if (m.name(m.event(i)) == "gemm_kernel") {
      details.setEvent(docs[0].get(), i);
      break;
    }
  EXPECT_EQ(details.value("Name"), "gemm_kernel");
  EXPECT_TRUE(details.value("Flow from").startsWith("cudaLaunchKernel"));
}

}  // namespace
}  // namespace cudascope::gui

namespace cudascope::gui {
namespace {

// --- Issue 24: the viewer as memory_viz and Perfetto users expect it ---

QString gui_data(const char* name) { return QString(CUDASCOPE_TEST_DATA) + "/../gui/data/" + name; }

std::shared_ptr<const LoadedSnapshot> load_convnet() {
  auto result = analysis::load_snapshot(gui_data("snap_convnet_cpp.pickle.gz").toStdString());
  EXPECT_TRUE(result) << (result ? "" : result.error().message());
  return result ? index_snapshot(std::move(result).value()) : nullptr;
}

TEST(GuiIssue24Test, CppNamesAreShortenedAsNsightShowsThem) {
  using analysis::shorten_cpp_name;
  EXPECT_EQ(shorten_cpp_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)"),
            "cutlass::Kernel2");
  EXPECT_EQ(shorten_cpp_name("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<at::native::CUDAFunctor_add<float> >(at::TensorIteratorBase&, at::native::CUDAFunctor_add<float> const&)::{lambda(int)#1})"),
            "at::native::elementwise_kernel");
  EXPECT_EQ(shorten_cpp_name("at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*)"), "at::detail::_empty_generic");
  EXPECT_EQ(shorten_cpp_name("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 4, 64, 64>(float*, int)"),
            "at::native::(anonymous namespace)::CatArrayBatchedCopy");
  EXPECT_EQ(shorten_cpp_name("std::function<void ()>::operator()() const"), "std::function::operator()");
  for (const char* same : {"<module>", "train_step", "ampere_sgemm_128x64_nn", "ProfilerStep#3", "aten::add_"})
    EXPECT_EQ(shorten_cpp_name(same), same);
  // The range summary shows the short name, the full one on hover and in the raw role.
  analysis::RangeSummary summary;
  summary.kernels.push_back({"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm>(Params)", 3, 30, 10, 10});
  RangeSummaryModel model;
  tester(&model);
  model.setSummary(summary);
  EXPECT_EQ(model.index(0, RangeSummaryModel::Name).data().toString(), "cutlass::Kernel2");
  EXPECT_EQ(model.index(0, RangeSummaryModel::Name).data(Qt::ToolTipRole).toString(), QString::fromStdString(summary.kernels[0].name));
}

TEST(GuiIssue24Test, StacksFoldTheDispatcherKeepUserFramesAndCopyWhole) {
  auto loaded = load_convnet();
  ASSERT_TRUE(loaded);
  // The 32 MiB activation of the last step: its stack has 7 allocator, 12 dispatcher frames.
  const auto& trace = loaded->snapshot->trace;
  uint32_t entry = UINT32_MAX;
  for (uint32_t i = 0; i < trace.size(); ++i)
    if (trace[i].action == analysis::Action::alloc && trace[i].size >= 48ull << 20) entry = i;
  ASSERT_NE(entry, UINT32_MAX);
  StackModel stack;
  tester(&stack);
  stack.setStack(loaded, trace[entry].stack);
  EXPECT_LE(stack.rowCount(), 10) << "C++ dispatcher runs fold into one row each";
  const int user = stack.userRow();
  ASSERT_GE(user, 0);
  EXPECT_TRUE(stack.index(user).data().toString().startsWith("forward (train_convnet.py:3")) << stack.index(user).data().toString().toStdString();
  EXPECT_TRUE(stack.index(user).data(Qt::UserRole).toBool());
  int folded_row = -1;
  for (int r = 0; r < stack.rowCount(); ++r) {
    const QString text = stack.index(r).data().toString();
    EXPECT_LT(text.size(), 140) << "no template signatures: " << text.toStdString();
    if (stack.index(r).data(StackModel::FoldRole).toInt() > 1) folded_row = r;
  }
  ASSERT_GE(folded_row, 0);
  const int before = stack.rowCount();
  stack.setExpanded(folded_row, true);
  EXPECT_GT(stack.rowCount(), before);
  stack.setFullNames(true);
  const QString copied = stack.copyText();
  EXPECT_TRUE(copied.contains("c10::impl::wrap_kernel_functor_unboxed_<")) << "Copy carries the full names";
  EXPECT_TRUE(copied.contains("torch::unwind::unwind() (??:0)")) << "and the hidden frames";
  // Hover text: short names, user frames kept, dispatcher folded.
  const QString tip = loaded->stackText(trace[entry].stack, 8);
  EXPECT_TRUE(tip.contains("forward (train_convnet.py:3")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("train_step (train_convnet.py:61)")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("C++ frames")) << tip.toStdString();
  EXPECT_FALSE(tip.contains("c10::ArrayRef")) << tip.toStdString();
}

TEST(GuiIssue24Test, OneSelectionLinksEntryIntervalAndBlock) {
  auto loaded = load_convnet();
  ASSERT_TRUE(loaded);
  SnapshotSelection selection;
  selection.setSnapshot(loaded);
  QSignalSpy changed(&selection, &SnapshotSelection::selectionChanged);
  const auto& trace = loaded->snapshot->trace;
  uint32_t alloc = 0;
  while (trace[alloc].action != analysis::Action::alloc) ++alloc;
  selection.selectEntry(alloc);
  ASSERT_TRUE(selection.selection().valid);
  EXPECT_EQ(selection.selection().entry, alloc);
  EXPECT_EQ(selection.selection().address, trace[alloc].addr);
  EXPECT_NE(selection.selection().interval, UINT32_MAX);
  EXPECT_EQ(changed.count(), 1);
  // Its free selects the same allocation (no new signal); a block at that address too.
  uint32_t free_entry = selection.selection().end_entry;
  if (free_entry != UINT32_MAX) {
    selection.selectEntry(free_entry);
    EXPECT_EQ(changed.count(), 1);
  }
  const MemorySelection first = selection.selection();
  selection.selectInterval(first.interval);
  EXPECT_EQ(selection.selection(), first);
  // The OOM entry: selected as itself, with what was asked.
  selection.selectEntry(uint32_t(trace.size() - 1));
  EXPECT_EQ(selection.selection().entry, trace.size() - 1);
  EXPECT_EQ(selection.selection().size, 12ull << 30);
  // One zoom: setRange emits once per change.
  QSignalSpy range(&selection, &SnapshotSelection::rangeChanged);
  selection.setRange(10, 20);
  selection.setRange(10, 20);
  EXPECT_EQ(range.count(), 1);
}

TEST(GuiIssue24Test, EventOrderAxisGivesEveryEntryOneStep) {
  auto loaded = load("snap_transformer_p4.pickle.gz");
  const auto order = build_event_order_timelines(*loaded);
  const auto range = loaded->snapshot->device_trace(loaded->device);
  EXPECT_EQ(order.allocations->begin_us(), int64_t(range.begin));
  EXPECT_LE(order.allocations->end_us(), int64_t(range.end));
  EXPECT_GE(order.allocations->end_us(), int64_t(range.end) - 1);
  ASSERT_EQ(order.allocations->intervals().size(), loaded->allocations->intervals().size());
  for (size_t i = 0; i < order.allocations->intervals().size(); i += 97) {
    EXPECT_EQ(order.allocations->intervals()[i].begin_entry, loaded->allocations->intervals()[i].begin_entry) << "same ids on both axes";
    EXPECT_EQ(order.allocations->intervals()[i].size, loaded->allocations->intervals()[i].size);
  }
  // Idle time takes no width: the burst fills most of the event-order axis, not ~20%.
  const double span = double(order.allocations->end_us() - order.allocations->begin_us());
  const auto& first = loaded->allocations->intervals()[0];
  EXPECT_LT(double(first.begin_entry == UINT32_MAX ? 0 : first.begin_entry) / span, 0.2);
  EXPECT_EQ(order.allocations->peak_bytes(), loaded->allocations->peak_bytes());
}

TEST(GuiIssue24Test, EveryErrorNamesItsFile) {
  const QString missing = "/nonexistent/dir/run.pickle.gz";
  const FileSniff sniff = sniff_file(missing);
  EXPECT_TRUE(sniff.error.contains(missing)) << sniff.error.toStdString();
}

TEST(GuiIssue24Test, TablesOpenInFileOrderAndReturnToIt) {
  auto loaded = load("snap_transformer_p4.pickle.gz");
  TraceTableModel trace;
  tester(&trace);
  trace.setSnapshot(loaded);
  EXPECT_EQ(trace.recordAt(0), 0u);
  trace.sort(TraceTableModel::Size, Qt::DescendingOrder);
  EXPECT_NE(trace.recordAt(0), 0u);
  trace.sort(-1);
  EXPECT_EQ(trace.sortColumn(), -1);
  for (int r = 0; r < 50; ++r) EXPECT_EQ(trace.recordAt(r), uint32_t(r));
}

TEST(GuiIssue24Test, AnOomRowSaysWhatWasAskedAndWhatWasFree) {
  auto loaded = load_convnet();
  ASSERT_TRUE(loaded);
  TraceTableModel trace;
  tester(&trace);
  trace.setSnapshot(loaded);
  const int last = trace.rowCount() - 1;
  EXPECT_EQ(trace.index(last, TraceTableModel::Action).data().toString(), "oom");
  EXPECT_EQ(trace.index(last, TraceTableModel::Address).data().toString(), "-");
  EXPECT_EQ(trace.index(last, TraceTableModel::Size).data().toString(), "asked 12.00 GiB, 1.50 GiB free on the device");
  EXPECT_TRUE(trace.index(last, 0).data(RecordTableModel::HighlightRole).toBool());
}

// A gzip trace of `events` kernels with poorly compressible names: several 1 MiB pieces.
QString write_gzip_trace(const QString& path, int events) {
  std::string text = "{\"traceEvents\": [\n";
  std::mt19937_64 rnd(7);
  for (int i = 0; i < events; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "k%016llx%016llx", (unsigned long long)rnd(), (unsigned long long)rnd());
    text += std::string(i ? ",\n" : "") + "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"" + name + "\",\"pid\":0,\"tid\":7,\"ts\":" +
            std::to_string(1000 + i * 3) + ",\"dur\":2,\"args\":{\"correlation\":" + std::to_string(rnd() % 1000000) + "}}";
  }
  text += "\n]}\n";
  gzFile f = gzopen(path.toStdString().c_str(), "wb");
  gzwrite(f, text.data(), unsigned(text.size()));
  gzclose(f);
  return path;
}

TEST(GuiIssue24Test, GzipTracesReportProgressAndCancelAsTheyAreRead) {
  int argc = 1;
  char arg0[] = "gui_model_test";
  char* argv[] = {arg0, nullptr};
  QCoreApplication app(argc, argv);
  QTemporaryDir dir;
  const QString path = write_gzip_trace(dir.filePath("big.json.gz"), 90000);
  ASSERT_GT(QFileInfo(path).size(), 2 << 20) << "several pieces of compressed input";
  TraceLoader loader;
  std::vector<int> progress;
  bool done = false, cancelled = false;
  QObject::connect(&loader, &TraceLoader::progress, [&](int p) { progress.push_back(p); });
  QObject::connect(&loader, &TraceLoader::loaded, [&](TraceDocument* d) { delete d; });
  QObject::connect(&loader, &TraceLoader::failed, [&](const QString&, bool c) { cancelled = c; });
  QObject::connect(&loader, &TraceLoader::finished, [&] { done = true; });
  loader.start(path);
  while (!done) QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
  int between = 0;
  for (int p : progress) between += p > 0 && p < 900;
  EXPECT_GE(between, 2) << "progress moves while a gzip trace is read (it stayed at 0 until the end)";
  // Cancel as soon as the first progress arrives: the load ends cancelled, not parsed whole.
  done = false;
  bool asked = false;
  QObject::connect(&loader, &TraceLoader::progress, [&](int p) {
    if (p > 0 && !asked) asked = true, loader.cancel();
  });
  loader.start(path);
  while (!done) QCoreApplication::processEvents(QEventLoop::AllEvents, 50);
  EXPECT_TRUE(cancelled);
}

TEST(GuiIssue24Test, ACutShortTraceSaysSoAndIsNotFollowed) {
  QTemporaryDir dir;
  // A gzip trace cut half way (a killed run), untouched for a minute.
  const QString whole = write_gzip_trace(dir.filePath("whole.json.gz"), 20000);
  QFile in(whole);
  ASSERT_TRUE(in.open(QIODevice::ReadOnly));
  const QByteArray bytes = in.readAll();
  const QString cut = dir.filePath("cut.json.gz");
  QFile out(cut);
  ASSERT_TRUE(out.open(QIODevice::WriteOnly));
  out.write(bytes.left(bytes.size() / 2));
  out.close();
  ASSERT_TRUE(out.open(QIODevice::ReadWrite));
  ASSERT_TRUE(out.setFileTime(QDateTime::currentDateTime().addSecs(-60), QFileDevice::FileModificationTime));
  out.close();
  auto doc = open_trace(cut);
  ASSERT_TRUE(doc);
  EXPECT_TRUE(doc->cutShort());
  EXPECT_FALSE(doc->following()) << "a file that stopped changing is not followed unless asked";
  EXPECT_TRUE(doc->canFollow());
  EXPECT_TRUE(doc->cutShortText().startsWith("CUT SHORT")) << doc->cutShortText().toStdString();
  EXPECT_GT(doc->model().event_count(), 0u);
  // The same file written just now: still being written, so followed.
  ASSERT_TRUE(out.open(QIODevice::ReadWrite));
  ASSERT_TRUE(out.setFileTime(QDateTime::currentDateTime(), QFileDevice::FileModificationTime));
  out.close();
  auto growing = open_trace(cut);
  ASSERT_TRUE(growing);
  EXPECT_FALSE(growing->cutShort());
  EXPECT_TRUE(growing->following());
}

// --- Issue 23: following a merged timeline of rank files still being written ---

// Events per rank group of a rank timeline (by the row each event's track is drawn in).
std::vector<std::size_t> events_per_rank(const TraceDocument& doc) {
  std::vector<std::size_t> n(doc.rankGroups().size(), 0);
  const auto& m = doc.model();
  for (std::size_t i = 0; i < m.event_count(); ++i) {
    const int g = doc.rankGroupOfRow(doc.index().row_of_track(m.event(i).track));
    if (g >= 0) ++n[std::size_t(g)];
  }
  return n;
}

TEST(GuiIssue23Test, AMergedTimelineFollowsEveryRankFileUntilEachIsComplete) {
  int argc = 1;
  char arg0[] = "gui_model_test";
  char* argv[] = {arg0, nullptr};
  QCoreApplication app(argc, argv);  // the follow timer and the step's watcher need an event loop
  QTemporaryDir dir;
  // Rank 1's host clock runs 2.5 ms ahead; both files are cut mid-event, as writers still running.
  const std::string text0 = rank_trace(0, "node-a", 0), text1 = rank_trace(1, "node-b", 2'500'000);
  const std::size_t cut0 = text0.size() * 55 / 100, cut1 = text1.size() * 35 / 100;
  const QString r0 = write_file(dir, "trace_0.json", text0.substr(0, cut0));
  const QString r1 = write_file(dir, "trace_1.json", text1.substr(0, cut1));
  auto append = [](const QString& path, const std::string& rest) {
    std::ofstream(path.toStdString(), std::ios::app) << rest;
  };
  QTemporaryDir whole_dir;
  auto whole = open_together({write_file(whole_dir, "trace_0.json", text0), write_file(whole_dir, "trace_1.json", text1)});
  ASSERT_EQ(whole.docs.size(), 1u);
  const TraceDocument& complete = *whole.docs.front();
  EXPECT_FALSE(complete.canFollow()) << "complete rank files are not kept for following";

  auto opened = open_together({r0, r1});
  ASSERT_EQ(opened.docs.size(), 1u) << opened.errors.join("; ").toStdString();
  TraceDocument& doc = *opened.docs.front();
  ASSERT_TRUE(doc.isRankTimeline());
  EXPECT_TRUE(doc.canFollow());
  EXPECT_TRUE(doc.following()) << "rank files still being written are followed";
  EXPECT_FALSE(doc.cutShort());
  EXPECT_EQ(doc.unfinishedPaths(), (QStringList{r0, r1}));
  EXPECT_LT(doc.model().event_count(), complete.model().event_count());
  EXPECT_NE(doc.rankGroups()[1].alignment.collectives, 3) << "not every collective was written yet";

  // Rank 0's writer finishes; the timer's step (off the UI thread) merges again.
  QSignalSpy rebuilt(&doc, &TraceDocument::rebuilt);
  QSignalSpy grew(&doc, &TraceDocument::grew);
  append(r0, text0.substr(cut0));
  ASSERT_TRUE(grew.wait(10000)) << "the timer's step takes in what rank 0 gained";
  EXPECT_EQ(rebuilt.count(), 1);
  EXPECT_GT(grew.front().front().toLongLong(), 0);
  EXPECT_TRUE(doc.following()) << "rank 1's file is still unfinished";
  EXPECT_EQ(doc.unfinishedPaths(), QStringList{r1}) << "rank 0's file is complete: no longer polled";
  EXPECT_EQ(events_per_rank(doc)[0], events_per_rank(complete)[0]) << "every event of rank 0";
  EXPECT_LT(events_per_rank(doc)[1], events_per_rank(complete)[1]);

  // Rank 1's writer finishes; one poll now (the same step, on this thread).
  append(r1, text1.substr(cut1));
  EXPECT_GT(doc.pollOnce(), 0);
  EXPECT_EQ(rebuilt.count(), 2);
  EXPECT_FALSE(doc.following()) << "every file is complete";
  EXPECT_TRUE(doc.unfinishedPaths().isEmpty());
  EXPECT_FALSE(doc.canFollow()) << "the sources are freed once every file is complete";
  EXPECT_EQ(doc.model().event_count(), complete.model().event_count());
  EXPECT_EQ(events_per_rank(doc), events_per_rank(complete));
  EXPECT_EQ(doc.index().rows().size(), complete.index().rows().size());
  // The clocks are aligned again on the collectives paired now.
  ASSERT_EQ(doc.rankGroups().size(), 2u);
  EXPECT_EQ(doc.rankGroups()[1].clock, RankGroup::Clock::aligned);
  EXPECT_EQ(doc.rankGroups()[1].alignment.collectives, 3);
  EXPECT_EQ(doc.rankGroups()[1].alignment.offset_ns, -2'500'000);
  EXPECT_EQ(find_event(doc, "aten::mm rank1")->ts_ns, 1'000'000) << "rank 1 on rank 0's clock";
  EXPECT_EQ(doc.search().find({"gemm_kernel", false, false}).count, 2u) << "search sees both ranks' new events";
  QTest::qWait(700);
  EXPECT_EQ(rebuilt.count(), 2) << "nothing is polled any more";
}

// Two ranks on one host, rank 0's file complete and rank 1's being written (its first
// `rank1_written` bytes so far), with the event loop the follow timer and step watcher need.
class GuiIssue23FollowTest : public ::testing::Test {
 protected:
  void write_ranks(std::size_t rank1_written) {
    r0 = write_file(dir, "trace_0.json", text0);
    r1 = write_file(dir, "trace_1.json", text1.substr(0, rank1_written));
  }
  void write_more_of_rank1(std::size_t from, std::size_t to = std::string::npos) {
    std::ofstream(r1.toStdString(), std::ios::app) << text1.substr(from, to == std::string::npos ? to : to - from);
  }

  int argc = 1;
  char arg0[15] = "gui_model_test";
  char* argv[2] = {arg0, nullptr};
  QCoreApplication app{argc, argv};
  QTemporaryDir dir;
  const std::string text0 = rank_trace(0, "node-a", 0), text1 = rank_trace(1, "node-b", 0);
  QString r0, r1;
};

TEST_F(GuiIssue23FollowTest, FollowingRestsThreeTimesAStepsLengthBeforeTheNextStep) {
  const std::size_t first_cut = text1.size() / 3, second_cut = text1.size() * 2 / 3;
  write_ranks(first_cut);
  auto opened = open_together({r0, r1});
  ASSERT_EQ(opened.docs.size(), 1u);
  TraceDocument& doc = *opened.docs.front();
  QSignalSpy grew(&doc, &TraceDocument::grew);
  const auto before_step = std::chrono::steady_clock::now();
  write_more_of_rank1(first_cut, second_cut);
  doc.setFollowing(true, 1);  // a tick every millisecond: only the rest spaces the steps
  ASSERT_TRUE(grew.wait(10000));
  ASSERT_GT(doc.lastStepSeconds(), 0.0);
  const auto rest = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(doc.lastStepSeconds() * TraceDocument::kRestPerStepTime));
  EXPECT_GE(doc.nextStepNotBefore(), before_step + rest) << "the rest counts from the step's end";
  const auto not_before = doc.nextStepNotBefore();
  write_more_of_rank1(second_cut);
  while (!doc.stepping() && grew.count() == 1) QCoreApplication::processEvents(QEventLoop::AllEvents, 1);
  EXPECT_GE(std::chrono::steady_clock::now(), not_before) << "no step starts while following rests";
  ASSERT_TRUE(grew.count() == 2 || grew.wait(10000));
  EXPECT_EQ(doc.model().event_count(), open_together({r0, r1}).docs.front()->model().event_count());
}

TEST_F(GuiIssue23FollowTest, AStepThatEndsWhileFollowingIsOffWaitsUntilItIsOnAgain) {
  const std::size_t cut = text1.size() / 2;
  write_ranks(cut);
  auto opened = open_together({r0, r1});
  ASSERT_EQ(opened.docs.size(), 1u);
  TraceDocument& doc = *opened.docs.front();
  EXPECT_TRUE(doc.following());
  EXPECT_EQ(doc.unfinishedPaths(), QStringList{r1});
  const std::size_t before = doc.model().event_count();
  QSignalSpy grew(&doc, &TraceDocument::grew);
  write_more_of_rank1(cut);
  // Paused (as for a range summary) right after a step started: its merge must not replace
  // the model a summary may be reading.
  doc.setFollowing(true, 1);
  for (int i = 0; i < 2000 && !doc.stepping(); ++i) QCoreApplication::processEvents(QEventLoop::AllEvents, 1);
  ASSERT_TRUE(doc.stepping());
  doc.setFollowing(false);
  for (int i = 0; i < 200 && doc.stepping(); ++i) QTest::qWait(20);
  ASSERT_FALSE(doc.stepping());
  EXPECT_TRUE(grew.isEmpty()) << "nothing changes while following is off";
  EXPECT_EQ(doc.model().event_count(), before);
  EXPECT_TRUE(doc.canFollow()) << "the merge waits";
  doc.setFollowing(true);  // applies it: the file is complete now
  EXPECT_EQ(grew.count(), 1);
  EXPECT_FALSE(doc.following());
  EXPECT_TRUE(doc.unfinishedPaths().isEmpty());
  auto whole = open_together({r0, r1});
  EXPECT_EQ(doc.model().event_count(), whole.docs.front()->model().event_count());
}

// Names of any length (a broken or hostile file's): a cell shows the first kMaxLabelChars
// of one and an ellipsis, its tooltip the first kMaxTooltipNameChars and the whole length,
// and the raw role, FullTextRole (copying), filters and sorting read the whole name.

QString cut_to(const std::string& name, qsizetype chars) {
  return QString::fromStdString(name.substr(0, std::size_t(chars))) + QChar(0x2026);
}

void expect_bounded_tooltip(const QModelIndex& index, const std::string& whole) {
  const QString tip = index.data(Qt::ToolTipRole).toString();
  EXPECT_TRUE(tip.startsWith(cut_to(whole, kMaxTooltipNameChars))) << tip.left(80).toStdString();
  EXPECT_TRUE(tip.endsWith(QStringLiteral("(%1 characters in all)").arg(QLocale().toString(qsizetype(whole.size())))))
      << tip.right(80).toStdString();
  EXPECT_LT(tip.size(), kMaxTooltipNameChars + 100);
}

TEST(GuiHugeNameTest, CappedCutsByUtf16UnitsAndNeverSplitsACharacter) {
  const std::string ascii(1000, 'a');
  EXPECT_EQ(capped(ascii, 10), QString(10, 'a') + QChar(0x2026));
  EXPECT_EQ(capped(std::string_view("short"), 10), "short");
  std::string euros, faces;  // 3 bytes and 1 UTF-16 unit each; 4 bytes and 2 units each
  for (int i = 0; i < 100; ++i) euros += "\u20ac", faces += "\U0001F600";
  EXPECT_EQ(capped(euros, 10), QString(10, QChar(0x20ac)) + QChar(0x2026));
  EXPECT_EQ(capped(faces, 5), QString::fromUtf8("\U0001F600\U0001F600\u2026")) << "a pair is not split";
  EXPECT_EQ(lengthNote(ascii, 1000), "");
  EXPECT_EQ(lengthNote(ascii, 10), QStringLiteral("\n(%1 characters in all)").arg(QLocale().toString(1000)));
  EXPECT_EQ(lengthNote(euros, 100), "") << "300 bytes, but 100 units: shown whole";
  EXPECT_EQ(lengthNote(faces, 199), QStringLiteral("\n(100 characters in all)"));
}

TEST(GuiHugeNameTest, TraceCellsShowABoundedPrefixOfAHugeNameAndKeepItWhole) {
  const std::string huge = "huge_" + std::string(2'000'000, 'x');
  QTemporaryDir dir;
  auto doc = open_trace(write_file(dir, "huge.json", huge_name_trace(huge)));
  ASSERT_TRUE(doc);
  const auto& m = doc->model();
  quint32 kernel = EventDetailsModel::kNone;
  for (quint32 i = 0; i < m.event_count(); ++i)
    if (m.name(m.event(i)) == huge && m.cat(m.event(i)) == "kernel") kernel = i;
  ASSERT_NE(kernel, EventDetailsModel::kNone);

  EventDetailsModel details;
  tester(&details);
  details.setEvent(doc.get(), kernel);
  EXPECT_EQ(details.value("Name"), cut_to(huge, kMaxLabelChars));
  for (int r = 0; r < details.rowCount(); ++r) {
    if (details.index(r, EventDetailsModel::Field).data().toString() != "Name") continue;
    const QModelIndex value = details.index(r, EventDetailsModel::Value);
    expect_bounded_tooltip(value, huge);
    EXPECT_EQ(value.data(FullTextRole).toString().toStdString(), huge) << "copying takes the whole name";
  }

  RangeSummaryModel summary;
  tester(&summary);
  summary.setSummary(analysis::summarize_range(m, doc->index(), doc->index().begin_ns(), doc->index().end_ns()));
  int huge_rows = 0;
  for (int r = 0; r < summary.rowCount(); ++r) {
    const QModelIndex name = summary.index(r, RangeSummaryModel::Name);
    EXPECT_LE(name.data().toString().size(), kMaxLabelChars + 1);
    if (name.data(Qt::UserRole).toString().toStdString() != huge) continue;
    ++huge_rows;
    EXPECT_EQ(name.data().toString(), cut_to(huge, kMaxLabelChars));
    EXPECT_EQ(name.data(FullTextRole).toString().toStdString(), huge);
    expect_bounded_tooltip(name, huge);
  }
  EXPECT_EQ(huge_rows, 2) << "the kernel and the annotation";
}

TEST(GuiHugeNameTest, AnArgKeyOfAnyLengthIsCutInItsCellAndKeptWholeForCopying) {
  const std::string key = "key_" + std::string(2'000'000, 'k');
  QTemporaryDir dir;
  auto doc = open_trace(write_file(dir, "huge_key.json", huge_key_trace(key)));
  ASSERT_TRUE(doc);
  ASSERT_EQ(doc->model().event_count(), 1u);
  EventDetailsModel details;
  tester(&details);
  details.setEvent(doc.get(), 0);
  int keyed_rows = 0;
  for (int r = 0; r < details.rowCount(); ++r) {
    if (details.index(r, EventDetailsModel::Value).data().toString() != "key_value") continue;
    ++keyed_rows;
    const QModelIndex field = details.index(r, EventDetailsModel::Field);
    EXPECT_EQ(field.data().toString(), cut_to(key, kMaxLabelChars));
    expect_bounded_tooltip(field, key);
    EXPECT_TRUE(field.data(FullTextRole).toString().toStdString() == key) << "copying takes the whole key";
  }
  EXPECT_EQ(keyed_rows, 1);
  const QModelIndex name = details.index(0, EventDetailsModel::Field);  // a short field: as shown
  ASSERT_EQ(name.data().toString(), "Name");
  EXPECT_EQ(name.data(FullTextRole), name.data());
  EXPECT_EQ(name.data(Qt::ToolTipRole), name.data());
}

TEST(GuiHugeNameTest, TheSummarySortsByWholeNamesThatReadAlikeWhenCut) {
  const std::string common(std::size_t(kMaxLabelChars) + 100, 'k');
  analysis::RangeSummary s;
  s.kernels = {{common + "b", 1, 30, 30, 30}, {common, 1, 20, 20, 20}, {common + "a", 1, 10, 10, 10}};
  RangeSummaryModel model;
  tester(&model);
  model.setSummary(s);
  EXPECT_EQ(model.index(0, RangeSummaryModel::Name).data(), model.index(2, RangeSummaryModel::Name).data()) << "cut alike";
  QSortFilterProxyModel sorted;  // as the trace page sorts it
  sorted.setSourceModel(&model);
  sorted.setSortRole(RangeSummaryModel::SortRole);
  sorted.sort(RangeSummaryModel::Name, Qt::AscendingOrder);
  std::vector<std::string> order;
  for (int r = 0; r < sorted.rowCount(); ++r)
    order.push_back(sorted.index(r, RangeSummaryModel::Name).data(Qt::UserRole).toString().toStdString());
  EXPECT_EQ(order, (std::vector<std::string>{common, common + "a", common + "b"}));
  sorted.sort(RangeSummaryModel::Total, Qt::AscendingOrder);  // other columns: by their raw numbers
  EXPECT_EQ(sorted.index(0, RangeSummaryModel::Total).data(Qt::UserRole).toLongLong(), 10);
}

std::shared_ptr<const LoadedSnapshot> load_json(const std::string& json) {
  auto result = analysis::load_snapshot_from_bytes(json, "names.json");
  EXPECT_TRUE(result) << (result ? "" : result.error().message());
  return result ? index_snapshot(std::move(result).value()) : nullptr;
}

TEST(GuiHugeNameTest, SnapshotCellsShowABoundedPrefixOfAHugeFrameNameAndKeepItWhole) {
  const std::string huge = "step_" + std::string(2'000'000, 'z');
  auto loaded = load_json(snapshot_json({"train_step", huge}));
  ASSERT_TRUE(loaded);
  const QString shown = cut_to(huge, kMaxLabelChars) + " (train.py:13)";
  TraceTableModel trace;
  tester(&trace);
  trace.setSnapshot(loaded);
  const QModelIndex frame = trace.index(1, TraceTableModel::Frame);
  EXPECT_EQ(frame.data().toString(), shown);
  EXPECT_EQ(frame.data(FullTextRole).toString().toStdString(), huge + " (train.py:13)");
  EXPECT_EQ(trace.index(1, TraceTableModel::Address).data(FullTextRole), trace.index(1, TraceTableModel::Address).data());
  const QString tip = trace.index(1, 0).data(Qt::ToolTipRole).toString();
  EXPECT_TRUE(tip.contains(shown)) << tip.left(80).toStdString();
  EXPECT_LT(tip.size(), 4 * kMaxLabelChars);
  // The filter reads the whole name: its end, past the cut, next to the location.
  RecordFilter f;
  f.frame_text = "zzz (train.py:13)";
  trace.setFilter(f);
  EXPECT_EQ(trace.rowCount(), 1);

  BlockTableModel blocks;
  tester(&blocks);
  blocks.setSnapshot(loaded);
  EXPECT_EQ(blocks.index(1, BlockTableModel::Frame).data().toString(), shown);

  StackModel stack;
  tester(&stack);
  stack.setStack(loaded, loaded->snapshot->trace[1].stack);
  ASSERT_EQ(stack.rowCount(), 1);
  EXPECT_EQ(stack.index(0).data().toString(), shown);
  expect_bounded_tooltip(stack.index(0), huge);
  EXPECT_TRUE(stack.index(0).data(FullTextRole).toString().toStdString() == huge + " (train.py:13)")
      << "copying the row takes the whole frame";
  EXPECT_TRUE(stack.copyText().contains(QString::fromStdString(huge + " (train.py:13)"))) << "Copy takes the whole stack";

  CompareModel compare;
  tester(&compare);
  compare.setComparison(analysis::compare_snapshots(*load_json(snapshot_json({"train_step"}))->snapshot, *loaded->snapshot));
  int huge_rows = 0;
  for (int r = 0; r < compare.rowCount(); ++r) {
    const QModelIndex group = compare.index(r, CompareModel::Frame);
    EXPECT_LE(group.data().toString().size(), kMaxLabelChars + 1);
    if (group.data(Qt::UserRole).toString().size() <= kMaxLabelChars) continue;
    ++huge_rows;
    EXPECT_EQ(group.data().toString(), cut_to(huge, kMaxLabelChars));
    EXPECT_TRUE(group.data(Qt::ToolTipRole).toString().endsWith("characters in all)"));
  }
  EXPECT_EQ(huge_rows, 1);
}

TEST(GuiHugeNameTest, FrameColumnsSortByWholeNamesThatReadAlikeWhenCut) {
  const std::string common(std::size_t(kMaxLabelChars) + 100, 'k');
  auto loaded = load_json(snapshot_json({common + "b", common, common + "a"}));
  ASSERT_TRUE(loaded);
  TraceTableModel trace;
  tester(&trace);
  trace.setSnapshot(loaded);
  EXPECT_EQ(trace.index(0, TraceTableModel::Frame).data().toString().section(QChar(0x2026), 0, 0),
            trace.index(2, TraceTableModel::Frame).data().toString().section(QChar(0x2026), 0, 0))
      << "cut alike";
  for (Qt::SortOrder order : {Qt::AscendingOrder, Qt::DescendingOrder}) {
    trace.sort(TraceTableModel::Frame, order);
    std::vector<qulonglong> lines;  // the frames' lines name them: 12 is "b", 13 the common part, 14 "a"
    for (int r = 0; r < trace.rowCount(); ++r)
      lines.push_back(trace.index(r, TraceTableModel::Frame).data(Qt::UserRole).toString().section(':', -1).chopped(1).toULongLong());
    const std::vector<qulonglong> want = order == Qt::AscendingOrder ? std::vector<qulonglong>{13, 14, 12} : std::vector<qulonglong>{12, 14, 13};
    EXPECT_EQ(lines, want);
  }
}

TEST(GuiHugeNameTest, AFoldedRunOfHugeCppFramesIsCutInItsRowAndKeptWholeForCopying) {
  // Two C++ library frames of the dispatcher's kind (no location): one folded row.
  const std::string first = "at::native::first_" + std::string(100'000, 'f');
  const std::string last = "at::native::last_" + std::string(100'000, 'l');
  auto loaded = load_json(snapshot_json({"train_step"}, {first + "(int)", last + "(int)"}));
  ASSERT_TRUE(loaded);
  StackModel stack;
  tester(&stack);
  stack.setStack(loaded, loaded->snapshot->trace[0].stack);
  ASSERT_EQ(stack.rowCount(), 2) << "the folded run, then the user frame";
  const QModelIndex fold = stack.index(0);
  ASSERT_EQ(fold.data(StackModel::FoldRole).toInt(), 2);
  EXPECT_EQ(fold.data().toString(), QStringLiteral("\u25b8 2 C++ library frames: %1 \u2026 %2")
                                        .arg(cut_to(first, kMaxLabelChars), cut_to(last, kMaxLabelChars)));
  EXPECT_TRUE(fold.data(FullTextRole).toString() == QStringLiteral("\u25b8 2 C++ library frames: %1 \u2026 %2")
                                                        .arg(QString::fromStdString(first), QString::fromStdString(last)))
      << "short names (no parameters), uncut: " << fold.data(FullTextRole).toString().left(80).toStdString();
  stack.setFullNames(true);
  EXPECT_TRUE(fold.data(FullTextRole).toString().contains(QString::fromStdString(last + "(int) (??:0)")));
  EXPECT_EQ(stack.index(1).data(FullTextRole).toString(), stack.index(1).data().toString()) << "a short frame: as shown";
}

}  // namespace
}  // namespace cudascope::gui
