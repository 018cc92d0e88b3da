// The trace loader on real files: cudascope's own trace, torch.profiler (Kineto) traces from
// an H100 and a plain Chrome trace; the same figures whatever the formatting; the model's
// tracks, nesting, flows and counters; errors that say where.
#include "trace_test_support.h"

#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_reader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <map>

using namespace cudascope;
using namespace cudascope::trace_testing;

namespace {

// Compares `text` with the golden file `name` in tests/data (rewritten when CUDASCOPE_UPDATE_GOLDEN=1).
void expect_golden(const std::string& text, const std::string& name) {
  const std::string path = data_path(name);
  if (std::getenv("CUDASCOPE_UPDATE_GOLDEN") != nullptr) write_text(path, text);
  EXPECT_EQ(text, read_text(path)) << "differs from " << path << " (CUDASCOPE_UPDATE_GOLDEN=1 rewrites it)";
}

}  // namespace

TEST(TraceLoaderTest, KinetoTracesGiveTheCountsPythonComputesFromTheSameFile) {
  for (const std::string name : {"kineto_train_h100_s3", "kineto_train_h100_s2"}) {
    SCOPED_TRACE(name);
    const nlohmann::json want = nlohmann::json::parse(read_text(data_path(name + ".expect.json")));
    const auto model = load(data_path(name + ".json.gz"));
    ASSERT_TRUE(model);
    EXPECT_EQ(model->format, analysis::TraceFormat::kineto);
    EXPECT_TRUE(model->complete);
    EXPECT_FALSE(model->cut_short);
    EXPECT_EQ(model->event_count(), want["events"].get<std::size_t>());
    EXPECT_EQ(model->devices.size(), want["device_properties"].get<std::size_t>());
    std::map<std::string, std::int64_t> by_cat;
    std::int64_t flow_events = 0;
    for (std::size_t i = 0; i < model->event_count(); ++i) {
      const auto& e = model->event(i);
      if (e.ph == 'X') ++by_cat[std::string(model->cat(e))];
      if (model->cat(e) == "ac2g" && (e.ph == 's' || e.ph == 'f')) ++flow_events;
    }
    EXPECT_EQ(flow_events, want["ac2g_flow_events"].get<std::int64_t>());
    for (const auto& [cat, count] : want["complete_events_by_cat"].items()) EXPECT_EQ(by_cat[cat], count.get<std::int64_t>()) << cat;
    EXPECT_EQ(by_cat.size(), want["complete_events_by_cat"].size());

    const analysis::TraceStats stats = analysis::compute_stats(*model);
    std::map<std::string, std::int64_t> kernels;
    for (const auto& k : stats.kernels) kernels[k.name] = k.count;
    ASSERT_EQ(kernels.size(), want["kernels_by_name"].size());
    for (const auto& [kernel, count] : want["kernels_by_name"].items()) EXPECT_EQ(kernels[kernel], count.get<std::int64_t>()) << kernel;
    EXPECT_NEAR(static_cast<double>(stats.kernel_total_ns) / 1000.0, want["kernel_total_us"].get<double>(), 1e-3);
    EXPECT_EQ(analysis::validate_trace(*model), std::vector<std::string>{});
  }
}

TEST(TraceLoaderTest, GoldenTablesForOurTraceAKinetoTraceAndAPlainChromeTrace) {
  const auto ours = load(data_path("trace_golden.json"));
  const auto kineto = load(data_path("kineto_train_h100_s3.json.gz"));
  const auto chrome = load(data_path("chrome_plain.json"));
  ASSERT_TRUE(ours && kineto && chrome);
  expect_golden(analysis::format_stats(analysis::compute_stats(*ours), analysis::StatsFormat::table), "trace_golden.stats.txt");
  expect_golden(analysis::format_stats(analysis::compute_stats(*kineto), analysis::StatsFormat::csv),
                "kineto_train_h100_s3.stats.csv");
  expect_golden(analysis::format_stats(analysis::compute_stats(*chrome), analysis::StatsFormat::table), "chrome_plain.stats.txt");
  // The JSON form is JSON, and says the same as the table.
  const auto json = nlohmann::json::parse(analysis::format_stats(analysis::compute_stats(*kineto), analysis::StatsFormat::json));
  EXPECT_EQ(json["format"], "kineto");
  EXPECT_EQ(json["kernels"].size(), analysis::compute_stats(*kineto).kernels.size());
  EXPECT_EQ(json["memory_operations"].size(), 4u);
}

TEST(TraceLoaderTest, ReSavedCompactIndentedAndReorderedFilesGiveTheSameFigures) {
  for (const std::string name : {"trace_golden.json", "kineto_train_h100_s2.json.gz", "chrome_plain.json"}) {
    SCOPED_TRACE(name);
    const auto original = load(data_path(name));
    ASSERT_TRUE(original);
    const std::string want = analysis::format_stats(analysis::compute_stats(*original), analysis::StatsFormat::json);
    const std::string variants[] = {"indent=2", "separators=(',', ':')", "sort_keys=True, indent=None",
                                    "indent='\\t', ensure_ascii=False"};
    for (const std::string& kwargs : variants) {
      SCOPED_TRACE(kwargs);
      const std::string path = python_resave(data_path(name), kwargs, "resave.json");
      ASSERT_FALSE(path.empty()) << "python3 could not re-save the file";
      const auto resaved = load(path);
      ASSERT_TRUE(resaved);
      EXPECT_EQ(analysis::format_stats(analysis::compute_stats(*resaved), analysis::StatsFormat::json), want);
      EXPECT_EQ(resaved->event_count(), original->event_count());
      EXPECT_EQ(analysis::validate_trace(*resaved), analysis::validate_trace(*original));
      // Gzipped, the same again.
      write_text(path + ".gz", gzip(read_text(path)));
      const auto zipped = load(path + ".gz");
      ASSERT_TRUE(zipped);
      EXPECT_EQ(analysis::format_stats(analysis::compute_stats(*zipped), analysis::StatsFormat::json), want);
      std::filesystem::remove(path);
      std::filesystem::remove(path + ".gz");
    }
  }
}

TEST(TraceLoaderTest, TimesAreExactNanosecondsAndTracksCarryTheirMetadata) {
  const auto model = load(data_path("kineto_train_h100_s3.json.gz"));
  ASSERT_TRUE(model);
  // The file's first event: "ts": 4554323494610.681, "dur": 3507.425 (microseconds).
  EXPECT_EQ(model->event(0).ts_ns, 4554323494610681);
  EXPECT_EQ(model->event(0).dur_ns, 3507425);
  EXPECT_EQ(model->base_time_ns, 1790857026000000000);
  ASSERT_EQ(model->devices.size(), 1u);
  EXPECT_EQ(model->devices[0].name, "NVIDIA H100 80GB HBM3");
  // The GPU stream row and the CPU thread row, named as the file names them.
  bool stream7 = false, cpu = false;
  for (std::uint32_t t = 0; t < model->tracks().size(); ++t) {
    const auto& track = model->tracks()[t];
    const auto& process = model->processes()[track.process];
    if (process.device == 0 && track.tid == 7) {
      stream7 = true;
      EXPECT_EQ(model->track_label(t), "stream 7 ");
      EXPECT_GT(track.events.size(), 100u);
    }
    if (process.pid == 436 && track.tid == 464) {
      cpu = true;
      EXPECT_EQ(model->process_label(track.process), "python3 (436)");
      EXPECT_GE(track.max_depth, 3) << "cpu_ops nest inside one another";
    }
  }
  EXPECT_TRUE(stream7 && cpu);
  // Perfetto's order: the CPU process (sort index 436) before the GPU (5000000).
  const auto order = model->track_order();
  std::size_t cpu_at = 0, gpu_at = 0;
  for (std::size_t i = 0; i < order.size(); ++i) {
    const auto& process = model->processes()[model->tracks()[order[i]].process];
    if (process.pid == 436 && cpu_at == 0) cpu_at = i + 1;
    if (process.device == 0 && gpu_at == 0) gpu_at = i + 1;
  }
  EXPECT_LT(cpu_at, gpu_at);
}

TEST(TraceLoaderTest, KinetoLaunchFlowsBindTheRuntimeCallToItsKernelWithTheSameCorrelation) {
  const auto model = load(data_path("kineto_train_h100_s3.json.gz"));
  ASSERT_TRUE(model);
  int bound = 0;
  for (const auto& flow : model->flows()) {
    if (model->string(flow.cat) != "ac2g") continue;
    ASSERT_NE(flow.from_slice, analysis::kNoEvent);
    ASSERT_NE(flow.to_slice, analysis::kNoEvent);
    const auto& launch = model->event(flow.from_slice);
    const auto& work = model->event(flow.to_slice);
    EXPECT_TRUE(model->cat(launch) == "cuda_runtime" || model->cat(launch) == "cuda_driver") << model->name(launch);
    EXPECT_TRUE(model->cat(work) == "kernel" || model->cat(work) == "gpu_memcpy" || model->cat(work) == "gpu_memset")
        << model->cat(work);
    EXPECT_EQ(model->arg_int(launch, "correlation"), static_cast<std::int64_t>(flow.id));
    EXPECT_EQ(model->arg_int(work, "correlation"), static_cast<std::int64_t>(flow.id));
    ++bound;
  }
  EXPECT_GE(bound, 102) << "each of the 102 kernels was launched";
}

TEST(TraceLoaderTest, PlainChromeTraceNestsRangesPairsAsyncAndFlowsAndKeepsCounters) {
  const auto model = load(data_path("chrome_plain.json"));
  ASSERT_TRUE(model);
  EXPECT_EQ(model->format, analysis::TraceFormat::chrome);
  EXPECT_EQ(model->event_count(), 25u);
  std::map<std::string, const analysis::TraceModel::Event*> first;
  for (std::size_t i = 0; i < model->event_count(); ++i) {
    const auto& e = model->event(i);
    first.emplace(std::string(1, e.ph) + ":" + std::string(model->name(e)), &e);
  }
  EXPECT_EQ(first["B:frame"]->dur_ns, 100000) << "B at 100 us closed by its E at 200 us";
  EXPECT_EQ(first["B:frame"]->depth, 0);
  EXPECT_EQ(first["X:layout"]->depth, 1);
  EXPECT_EQ(first["X:raster"]->depth, 2) << "inside paint inside frame";
  EXPECT_EQ(first["b:request"]->dur_ns, 75000);
  EXPECT_EQ(model->id_text(*first["b:request"]), "0x1f");
  EXPECT_EQ(model->arg_string(*first["X:read"], "path"), "a,b.txt");
  EXPECT_EQ(model->arg_int(*first["X:read"], "bytes"), 4096);
  ASSERT_EQ(model->flows().size(), 1u);
  const auto& flow = model->flows()[0];
  EXPECT_EQ(model->name(model->event(flow.from_slice)), "read");
  EXPECT_EQ(model->name(model->event(flow.to_slice)), "layout") << "bp e: the slice enclosing the f";
  ASSERT_EQ(model->counters().size(), 1u);
  const auto& heap = model->counters()[0];
  ASSERT_EQ(heap.series.size(), 2u);
  EXPECT_EQ(model->string(heap.series[0].key), "used");
  EXPECT_EQ(heap.series[0].values, (std::vector<double>{1000, 2500, 1500.5}));
  bool named = false;
  for (std::uint32_t t = 0; t < model->tracks().size(); ++t) named |= model->track_label(t) == "io \"worker\"";
  EXPECT_TRUE(named);
  EXPECT_EQ(analysis::validate_trace(*model), std::vector<std::string>{});
  // The array form and the object form are the same trace.
  const std::string object = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": " + read_text(data_path("chrome_plain.json")) + "}";
  const auto as_object = analysis::load_trace_text(object, "object form");
  ASSERT_TRUE(as_object.ok()) << as_object.error;
  EXPECT_EQ(analysis::format_stats(analysis::compute_stats(*as_object.model), analysis::StatsFormat::json),
            analysis::format_stats(analysis::compute_stats(*model), analysis::StatsFormat::json));
}

TEST(TraceLoaderTest, NotATraceIsAnErrorNamingTheByteWhereItStopped) {
  struct Case {
    std::string text;
    std::string want;
  };
  const Case cases[] = {
      {"hello", "byte 0: expected '{' or '['"},
      {"", "the file is empty"},
      {"{\"a\": 1, \"b\": [1, 2]}", "no \"traceEvents\" array"},
      {"{\"traceEvents\": 5}", "byte 16: \"traceEvents\" is not an array"},
      {"{\"traceEvents\": [{\"ph\": \"X\",]}", "byte 28: expected a member name in event 0"},
      {"[{\"ph\": \"X\", \"ts\": 01}]", "byte 19: a number with a leading zero"},
      {"{\"traceEvents\": []} trailing", "byte 20: unexpected text after the end of the trace"},
      {"[{\"ph\": \"i\", \"name\": \"a\tb\"}]", "control character inside a string"},
      {"[1, 2] ]", "unexpected text"},
  };
  for (const Case& c : cases) {
    const auto loaded = analysis::load_trace_text(c.text, "input.json");
    EXPECT_FALSE(loaded.ok()) << c.text;
    EXPECT_EQ(loaded.error.rfind("input.json: ", 0), 0u) << loaded.error;
    EXPECT_NE(loaded.error.find(c.want), std::string::npos) << "text: " << c.text << "\nerror: " << loaded.error;
  }
  const auto missing = analysis::load_trace("/nonexistent/trace.json");
  EXPECT_NE(missing.error.find("/nonexistent/trace.json"), std::string::npos) << missing.error;
}

TEST(TraceLoaderTest, CheckNeverPassesATraceWithoutEvents) {
  for (const std::string text : {"{\"traceEvents\": []}", "[]", "[{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1}]",
                                 "{\"traceEvents\": ["}) {
    const auto loaded = analysis::load_trace_text(text, "empty");
    ASSERT_TRUE(loaded.ok()) << loaded.error;
    const auto problems = analysis::validate_trace(*loaded.model);
    ASSERT_FALSE(problems.empty()) << text;
    EXPECT_NE(problems.back().find("no events"), std::string::npos) << problems.back();
  }
}

TEST(TraceLoaderTest, WrongFieldTypesAreReportedAndTheEventsStillRead) {
  const auto loaded = analysis::load_trace_text(
      "[{\"ph\": \"X\", \"name\": \"k\", \"pid\": 1, \"tid\": 1, \"ts\": \"10\", \"dur\": 1},"
      " {\"name\": \"no phase\"}, {\"ph\": \"X\", \"name\": \"k\", \"pid\": 1, \"tid\": 1, \"ts\": 5, \"dur\": -2},"
      " {\"ph\": \"C\", \"name\": \"c\", \"pid\": 1, \"ts\": 1, \"args\": {\"v\": \"high\"}}]",
      "types");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const auto& problems = loaded.model->format_problems;
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0], "event 0: \"ts\" is a string, read as the number it holds");
  EXPECT_EQ(loaded.model->event(0).ts_ns, 10000) << "as Chrome's viewer and Perfetto read it";
  EXPECT_EQ(problems[1], "event 1: no \"ph\"");
  EXPECT_EQ(problems[2], "event 2: negative \"dur\"");
  EXPECT_EQ(problems[3], "event 3: (C): counter \"v\" is not a number");
  EXPECT_EQ(loaded.model->event_count(), 3u) << "the event without \"ph\" is skipped, the others kept";
}

// Past the few hundred listed, the problems are counted: the note and the list's last line
// say how many there are in all, not how many were listed.
TEST(TraceLoaderTest, ProblemsPastTheListedOnesAreCountedInTheNote) {
  constexpr int kEvents = 1234;
  std::string text = "[";
  for (int i = 0; i < kEvents; ++i) {
    text += std::string(i ? "," : "") + R"({"ph":"X","name":"k","pid":1,"tid":1,"ts":)" + std::to_string(i) + R"(,"dur":-1})";
  }
  const auto loaded = analysis::load_trace_text(text + "]", "many");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const auto& problems = loaded.model->format_problems;
  ASSERT_GT(problems.size(), 100u);
  ASSERT_LT(problems.size(), static_cast<std::size_t>(kEvents));
  EXPECT_EQ(loaded.model->format_problem_count, static_cast<std::uint64_t>(kEvents));
  EXPECT_EQ(problems.back(), "(" + std::to_string(kEvents - (problems.size() - 1)) + " more problems not listed)");
  const auto& notes = loaded.model->notes;
  EXPECT_NE(std::find(notes.begin(), notes.end(), std::to_string(kEvents) + " format problems (see --check)"),
            notes.end())
      << ::testing::PrintToString(notes);
}

// Damage after a whole events array ends the reading; however many event problems came before
// it, its line is listed (with the byte), before the count of those not listed.
TEST(TraceLoaderTest, DamageAfterTheEventsIsListedPastTheListedProblems) {
  constexpr int kEvents = 250;
  std::string text = "{\"traceEvents\": [";
  for (int i = 0; i < kEvents; ++i) {
    text += std::string(i ? "," : "") + R"({"ph":"X","name":"k","pid":1,"tid":1,"ts":)" + std::to_string(i) + R"(,"dur":-1})";
  }
  text += R"(], "traceName": "C:\Users\dev\trace.json"})";
  const std::string damage = "byte " + std::to_string(text.find("Users")) +
                             ": unknown escape in a string (after the events array: its events are read, the rest of the file is not)";
  const auto loaded = analysis::load_trace_text(text, "noisy");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const auto& model = *loaded.model;
  EXPECT_EQ(model.event_count(), static_cast<std::size_t>(kEvents));
  EXPECT_EQ(model.format_problem_count, static_cast<std::uint64_t>(kEvents + 1));
  const auto& problems = model.format_problems;
  ASSERT_GE(problems.size(), 3u);
  EXPECT_EQ(problems[0], "event 0: negative \"dur\"");
  EXPECT_EQ(problems[problems.size() - 2], damage);
  EXPECT_EQ(problems.back(), "(" + std::to_string(kEvents + 1 - (problems.size() - 1)) + " more problems not listed)");
  EXPECT_LT(problems.size(), static_cast<std::size_t>(kEvents));
  const auto checked = analysis::validate_trace(model);
  EXPECT_NE(std::find(checked.begin(), checked.end(), damage), checked.end()) << "--check names the damaged byte";
  EXPECT_NE(std::find(model.notes.begin(), model.notes.end(), std::to_string(kEvents + 1) + " format problems (see --check)"),
            model.notes.end())
      << ::testing::PrintToString(model.notes);
  // The viewer's follower lists it alike.
  const std::string path = temp_path("noisy_damaged.json");
  write_text(path, text);
  analysis::TraceFollower follower(path);
  EXPECT_EQ(follower.poll(), kEvents) << follower.error();
  EXPECT_TRUE(follower.finished());
  EXPECT_EQ(follower.model().format_problems, problems);
  std::filesystem::remove(path);
}
