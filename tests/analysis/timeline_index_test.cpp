// The viewer's index over a trace: rows and their order, nesting depth, level of detail
// that never drops an event unmarked, search, and range summaries.
#include <cudascope/analysis/timeline_index.h>
#include <cudascope/analysis/timeline_search.h>
#include <cudascope/analysis/timeline_summary.h>
#include <cudascope/analysis/trace_loader.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <random>
#include <set>

namespace cudascope::analysis {
namespace {

std::string data_path(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA) + "/" + name; }

std::unique_ptr<TraceModel> load(const std::string& name) {
  auto result = load_trace(data_path(name));
  EXPECT_TRUE(result.ok()) << result.error;
  return std::move(result.model);
}

std::unique_ptr<TraceModel> load_text(const std::string& text) {
  auto result = load_trace_text(text, "generated");
  EXPECT_TRUE(result.ok()) << result.error;
  return std::move(result.model);
}

std::vector<std::string> labels(const TimelineIndex& index) {
  std::vector<std::string> out;
  for (const auto& row : index.rows()) out.push_back(row.label);
  return out;
}

TEST(TimelineIndexTest, RowsFollowProcessesThenCountersThenThreads) {
  const auto model = load("trace_golden.json");
  const auto index = TimelineIndex::build(*model);
  const auto& rows = index.rows();
  // GPU 0 has sort index 0; the CPU process sorts by its pid (4194305), so it comes after.
  std::vector<TimelineRow::Kind> kinds;
  for (const auto& r : rows) kinds.push_back(r.kind);
  using K = TimelineRow::Kind;
  EXPECT_EQ(kinds, (std::vector<K>{K::process, K::counter, K::counter, K::slices, K::process, K::slices}))
      << ::testing::PrintToString(labels(index));
  EXPECT_TRUE(rows[0].gpu);
  EXPECT_EQ(rows[3].label, "stream 7");
  EXPECT_FALSE(rows[4].gpu);
  EXPECT_EQ(rows[5].label, "thread 4194305");
  EXPECT_EQ(index.row_of_track(rows[5].track), 5u);
  EXPECT_EQ(index.begin_ns(), 1000001000);
  EXPECT_EQ(index.end_ns(), 1000030000);
}

// Many processes of several threads each, their events interleaved in the file: each
// process's header row is followed by its own threads, in tid order, and nothing else (the rows
// are built from each process's tracks, gathered once).
TEST(TimelineIndexTest, ManyProcessesEachGetTheirOwnThreadsInOrder) {
  constexpr int kProcesses = 3000, kThreads = 3;
  std::string text = "[";
  for (int t = kThreads - 1; t >= 0; --t) {
    for (int p = 0; p < kProcesses; ++p) {
      text += std::string(text.size() > 1 ? "," : "") + R"({"ph":"X","name":"k","ts":)" + std::to_string(p) +
              R"(,"dur":1,"pid":)" + std::to_string(1000 + p) + R"(,"tid":)" + std::to_string(t) + "}";
    }
  }
  text += "]";
  const auto model = load_text(text);
  const auto index = TimelineIndex::build(*model);
  const auto& rows = index.rows();
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kProcesses * (1 + kThreads)));
  for (int p = 0; p < kProcesses; ++p) {
    const std::size_t header = static_cast<std::size_t>(p) * (1 + kThreads);
    ASSERT_EQ(rows[header].kind, TimelineRow::Kind::process) << header;
    EXPECT_EQ(rows[header].label, "process " + std::to_string(1000 + p));
    for (int t = 0; t < kThreads; ++t) {
      const TimelineRow& row = rows[header + 1 + t];
      ASSERT_EQ(row.kind, TimelineRow::Kind::slices) << header + 1 + t;
      EXPECT_EQ(row.process, rows[header].process);
      EXPECT_EQ(row.label, "thread " + std::to_string(t));
    }
  }
}

TEST(TimelineIndexTest, NvtxRangesNestTheCallsInsideThem) {
  const auto model = load("trace_golden.json");
  const auto index = TimelineIndex::build(*model);
  const std::uint32_t cpu = 5;
  ASSERT_EQ(index.rows()[cpu].lanes, 2);
  std::vector<TimelineItem> items;
  index.items(cpu, index.begin_ns(), index.end_ns(), 1.0, items);
  std::map<std::string, int> depth;
  for (const auto& item : items) depth[std::string(model->name(model->event(item.event)))] = item.depth;
  EXPECT_EQ(depth["step 0"], 0);
  EXPECT_EQ(depth["cudaLaunchKernel"], 1);
  EXPECT_EQ(depth["left open"], 0);
  // The launch's flow leads to the kernel on the stream.
  const auto launch = index.event_at(cpu, 1, 1000002500, 0);
  ASSERT_TRUE(launch);
  EXPECT_EQ(model->name(model->event(*launch)), "cudaLaunchKernel");
  const auto flows = index.flows_of(*model, *launch);
  ASSERT_EQ(flows.size(), 1u);
  const auto kernel = model->flows()[flows[0]].to_slice;
  ASSERT_NE(kernel, kNoEvent);
  EXPECT_EQ(model->name(model->event(kernel)), "add_kernel(float*, float*, int)");
  EXPECT_EQ(index.row_of_track(model->event(kernel).track), 3u);
}

// A thread with nested ranges and bursts of tiny events between long ones.
std::string generated_trace(int events, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::string text = "[";
  double t = 0;
  for (int i = 0; i < events; ++i) {
    const bool burst = (i / 50) % 2 == 0;
    const double dur = burst ? 0.001 * double(rng() % 50) : 1.0 + double(rng() % 400);
    if (i % 97 == 0)  // an enclosing range over the next few events
      text += "{\"ph\":\"X\",\"name\":\"range " + std::to_string(i % 5) + "\",\"cat\":\"nvtx\",\"pid\":1,\"tid\":1,\"ts\":" +
              std::to_string(t) + ",\"dur\":" + std::to_string(dur * 20 + 30) + "},";
    text += "{\"ph\":\"X\",\"name\":\"op " + std::to_string(rng() % 7) + "\",\"cat\":\"cpu_op\",\"pid\":1,\"tid\":1,\"ts\":" +
            std::to_string(t + 0.0005) + ",\"dur\":" + std::to_string(dur) + "},";
    t += dur + (burst ? 0.002 : 0.5);
  }
  text.back() = ']';
  return text;
}

TEST(TimelineIndexTest, LevelOfDetailNeverDropsAnEventUnmarked) {
  const auto model = load_text(generated_trace(20000, 7));
  const auto index = TimelineIndex::build(*model);
  ASSERT_EQ(index.rows().size(), 2u);
  const std::uint32_t row = 1;
  const std::int64_t span = index.end_ns() - index.begin_ns();
  for (int zoom = 0; zoom < 14; ++zoom) {
    const std::int64_t width = std::max<std::int64_t>(span >> zoom, 1000);
    const std::int64_t t0 = index.begin_ns() + (span - width) / 3;
    const std::int64_t t1 = t0 + width;
    const double ns_per_px = double(width) / 1500.0;
    std::vector<TimelineItem> items;
    index.items(row, t0, t1, ns_per_px, items);
    std::set<std::uint32_t> covered;
    size_t merged = 0;
    for (const auto& item : items) {
      for (std::uint32_t k = 0; k < item.count; ++k)
        ASSERT_TRUE(covered.insert(index.lane_event(row, item.depth, item.first + k)).second) << "an event drawn twice";
      if (item.merged()) ++merged;
    }
    // Every event overlapping the range is an item or inside a merged (marked) one.
    for (std::uint16_t d = 0; d < index.rows()[row].lanes; ++d)
      for (size_t p = 0; p < index.lane_size(row, d); ++p) {
        const auto& e = model->event(index.lane_event(row, d, p));
        if (e.ts_ns <= t1 && e.end_ns() >= t0) ASSERT_TRUE(covered.count(index.lane_event(row, d, p))) << "zoom " << zoom;
      }
    // A frame's work is bounded by pixels, not events: at most a few items per pixel per lane.
    EXPECT_LE(items.size(), size_t(1500 * 2 * index.rows()[row].lanes + 10)) << "zoom " << zoom;
    if (zoom == 0) EXPECT_GT(merged, 0u) << "the whole trace at 1500 px merges the bursts";
  }
}

TEST(TimelineSearchTest, SubstringAndRegexFindEveryMatchInTimeOrder) {
  const auto model = load("kineto_train_h100_s3.json.gz");
  const auto search = TimelineSearch::build(*model);
  std::ifstream in(data_path("kineto_train_h100_s3.expect.json"));
  const auto expect = nlohmann::json::parse(in);

  const auto launches = search.find({"cudaLaunchKernel", false, true});
  std::uint64_t brute = 0;
  for (size_t i = 0; i < model->event_count(); ++i)
    brute += model->name(model->event(i)).find("cudaLaunchKernel") != std::string_view::npos;  // also ...ExC
  EXPECT_EQ(launches.count, brute);
  EXPECT_GT(brute, 0u);

  // Regex over the kernel names Python counted: every kernel whose name starts with "void at::native".
  const auto re = search.find({"^void at::native", true, true});
  std::uint64_t want = 0;
  for (const auto& [name, count] : expect["kernels_by_name"].items())
    if (name.rfind("void at::native", 0) == 0) want += count.get<std::uint64_t>();
  std::uint64_t other = 0;  // events of other categories named alike (gpu annotations, if any)
  for (size_t i = 0; i < model->event_count(); ++i) {
    const auto& e = model->event(i);
    other += e.ph != 'f' && e.ph != 's' && model->cat(e) != "kernel" && model->name(e).rfind("void at::native", 0) == 0;
  }
  EXPECT_GT(want, 0u);
  EXPECT_EQ(re.count, want + other);

  // Next from the start walks all matches in time order; previous walks back.
  std::int64_t ts = INT64_MIN;
  std::uint32_t ev = 0;
  std::uint64_t walked = 0;
  while (auto next = search.next(launches, ts, ev)) {
    const auto& e = model->event(*next);
    ASSERT_GE(e.ts_ns, ts);
    ts = e.ts_ns, ev = *next, ++walked;
  }
  EXPECT_EQ(walked, launches.count);
  std::uint64_t back = 0;
  while (auto prev = search.previous(launches, ts, ev)) ts = model->event(*prev).ts_ns, ev = *prev, ++back;
  EXPECT_EQ(back, launches.count - 1);

  EXPECT_EQ(search.find({"CUDALAUNCHKERNEL", false, false}).count, launches.count);  // case ignored
  EXPECT_EQ(search.find({"CUDALAUNCHKERNEL", false, true}).count, 0u);
  EXPECT_FALSE(search.find({"([", true, false}).error.empty());
}

TEST(TimelineSummaryTest, WholeRangeMatchesPythonsKernelCounts) {
  const auto model = load("kineto_train_h100_s3.json.gz");
  const auto index = TimelineIndex::build(*model);
  std::ifstream in(data_path("kineto_train_h100_s3.expect.json"));
  const auto expect = nlohmann::json::parse(in);
  const auto summary = summarize_range(*model, index, index.begin_ns(), index.end_ns());
  std::map<std::string, std::uint64_t> got;
  std::uint64_t total = 0;
  for (const auto& k : summary.kernels) got[k.name] = k.count, total += k.count;
  EXPECT_EQ(total, expect["kernel_count"].get<std::uint64_t>());
  for (const auto& [name, count] : expect["kernels_by_name"].items()) EXPECT_EQ(got[name], count.get<std::uint64_t>()) << name;
  std::uint64_t annotations = 0;
  for (const auto& r : summary.ranges) annotations += r.count;
  EXPECT_EQ(annotations, expect["complete_events_by_cat"]["user_annotation"].get<std::uint64_t>());
  ASSERT_EQ(summary.streams.size(), 1u);
  EXPECT_GT(summary.streams[0].busy_fraction, 0.0);
  EXPECT_LT(summary.streams[0].busy_fraction, 1.0);
}

TEST(TimelineSummaryTest, BusyTimeIsTheUnionClippedToTheRange) {
  const auto model = load("trace_golden.json");
  const auto index = TimelineIndex::build(*model);
  // [10 us, 22 us] after the start: the kernel (10 to 20.25) and the copy (21 to 22).
  const auto summary = summarize_range(*model, index, 1000010000, 1000022000);
  ASSERT_EQ(summary.streams.size(), 1u);
  EXPECT_EQ(summary.streams[0].events, 2u);
  EXPECT_EQ(summary.streams[0].busy_ns, 10250 + 1000);
  EXPECT_NEAR(summary.streams[0].busy_fraction, 11.25 / 12.0, 1e-9);
  ASSERT_EQ(summary.kernels.size(), 1u);
  EXPECT_EQ(summary.kernels[0].total_ns, 10250);
  // Half of the kernel: still counted (whole duration), busy time clipped.
  const auto half = summarize_range(*model, index, 1000015000, 1000020000);
  EXPECT_EQ(half.streams[0].busy_ns, 5000);
  EXPECT_EQ(half.kernels[0].count, 1u);
  ASSERT_EQ(half.ranges.size(), 1u);
  EXPECT_EQ(half.ranges[0].name, "step 0");
}

}  // namespace
}  // namespace cudascope::analysis
