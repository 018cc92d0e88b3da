// The trace loader on the shapes other writers give the same format: Kineto as older PyTorch
// releases shipped it, and Chrome trace-event files from other tools. Each input here is
// small and written the way its writer writes (tests/data/README.md names the writer and the
// source read for each); the figures asserted are counted by hand from the file.
#include "trace_test_support.h"

#include <cudascope/analysis/event_kind.h>
#include <cudascope/analysis/timeline_index.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

using namespace cudascope;
using namespace cudascope::trace_testing;

namespace {

const analysis::DurationStat* find(const std::vector<analysis::DurationStat>& rows, const std::string& name) {
  for (const auto& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

// The first event of phase `ph` whose name starts with `prefix`.
const analysis::TraceModel::Event* first(const analysis::TraceModel& model, char ph, const std::string& prefix) {
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const auto& e = model.event(i);
    if (e.ph == ph && model.name(e).substr(0, prefix.size()) == prefix) return &e;
  }
  return nullptr;
}

}  // namespace

// Kineto as of 2022 (PyTorch 1.13's era): times are integer epoch microseconds of 16 digits,
// flows are "async_cpu_to_gpu" with "bp": "e" on both ends, distributedInfo comes before the
// events, and the spans use string pids ("Spans", "Traces", "").
TEST(TraceVersionsTest, Kineto2022IntegerEpochMicrosecondsAreExactNanoseconds) {
  const auto model = load(data_path("kineto_shape_2022.json"));
  ASSERT_TRUE(model);
  EXPECT_EQ(model->format, analysis::TraceFormat::kineto);
  EXPECT_TRUE(model->complete);
  EXPECT_EQ(model->event_count(), 38u);
  EXPECT_EQ(model->rank, 1);
  EXPECT_EQ(model->world_size, 2);
  ASSERT_EQ(model->devices.size(), 1u);
  EXPECT_EQ(model->devices[0].total_memory, 42505273344);

  // 16 digits of microseconds times 1000 do not fit a double's 53 bits: read through one,
  // 1666000000000143 us came back as ...143104 ns.
  const auto* sgemm = first(*model, 'X', "ampere_sgemm");
  const auto* clamp = first(*model, 'X', "void at::native::vectorized_elementwise_kernel");
  const auto* step = first(*model, 'X', "ProfilerStep#0");
  ASSERT_TRUE(sgemm && clamp && step);
  EXPECT_EQ(sgemm->ts_ns, 1666000000000143000);
  EXPECT_EQ(clamp->ts_ns, 1666000000000160000);
  EXPECT_EQ(step->ts_ns, 1666000000000101000);
  EXPECT_EQ(model->min_ts_ns, 1666000000000100000);
  EXPECT_EQ(model->max_ts_ns, 1666000000001003000);
  // The clamp kernel starts as the sgemm ends: side by side under the GPU annotation, not
  // nested in the sgemm (as a 104 ns error on one start made it).
  const auto* annotation = first(*model, 'X', "ProfilerStep#0");
  for (std::size_t i = 0; i < model->event_count(); ++i) {
    const auto& e = model->event(i);
    if (model->cat(e) == "gpu_user_annotation") annotation = &e;
  }
  EXPECT_EQ(annotation->depth, 0);
  EXPECT_EQ(sgemm->depth, 1);
  EXPECT_EQ(clamp->depth, 1);

  const analysis::TraceStats stats = analysis::compute_stats(*model);
  ASSERT_EQ(stats.kernels.size(), 2u);
  EXPECT_EQ(stats.kernels[0].name, "ampere_sgemm_32x32_sliced1x4_nn");
  EXPECT_EQ(stats.kernels[0].count, 2);
  EXPECT_EQ(stats.kernels[0].total_ns, 34000);
  EXPECT_EQ(stats.kernels[1].count, 1);
  EXPECT_EQ(stats.kernels[1].total_ns, 3000);
  EXPECT_EQ(stats.kernel_total_ns, 37000);
  ASSERT_EQ(stats.copies.size(), 2u);
  EXPECT_EQ(stats.copies[0].kind, "DtoH");
  EXPECT_EQ(stats.copies[0].bytes, 4096);
  EXPECT_EQ(stats.copies[0].total_ns, 4000);
  EXPECT_EQ(stats.copies[1].kind, "Memset");
  EXPECT_EQ(stats.copies[1].bytes, 512);
  EXPECT_EQ(stats.copies[1].total_ns, 1000);
  const auto* launches = find(stats.api_calls, "cudaLaunchKernel");
  ASSERT_TRUE(launches);
  EXPECT_EQ(launches->count, 3);
  EXPECT_EQ(launches->total_ns, 19000);
  ASSERT_EQ(stats.gpu_annotations.size(), 1u);
  EXPECT_EQ(stats.gpu_annotations[0].total_ns, 377000);
  ASSERT_TRUE(find(stats.ranges, "ProfilerStep#0"));
  EXPECT_EQ(find(stats.ranges, "ProfilerStep#0")->total_ns, 817000);

  // Each launch binds to its kernel, copy or fill through the flow of its correlation id.
  int bound = 0;
  for (const auto& flow : model->flows()) {
    ASSERT_NE(flow.from_slice, analysis::kNoEvent);
    ASSERT_NE(flow.to_slice, analysis::kNoEvent);
    EXPECT_EQ(model->cat(model->event(flow.from_slice)), "cuda_runtime");
    EXPECT_EQ(model->arg_int(model->event(flow.to_slice), "correlation"), static_cast<std::int64_t>(flow.id));
    ++bound;
  }
  EXPECT_EQ(bound, 5);
  EXPECT_EQ(analysis::validate_trace(*model), std::vector<std::string>{});
}

// Times are integers of nanoseconds: microseconds of up to 16 integer digits (every epoch time
// in microseconds until the year 2262) are read exactly; past (INT64_MAX - 1000) / 1000 us no
// time fits, and the event's "ts" is reported out of range.
TEST(TraceVersionsTest, TimesOfSixteenIntegerDigitsAreExactAndLongerOnesOutOfRange) {
  auto loaded = analysis::load_trace_text(
      R"([{"ph":"X","cat":"kernel","name":"k","pid":1,"tid":1,"ts":9223372036854774.999,"dur":1},)"
      R"( {"ph":"X","cat":"kernel","name":"k","pid":1,"tid":1,"ts":9223372036854775,"dur":1},)"
      R"( {"ph":"X","cat":"kernel","name":"k","pid":1,"tid":1,"ts":12345678901234567,"dur":1},)"
      R"( {"ph":"X","cat":"kernel","name":"k","pid":1,"tid":1,"ts":123456789012345678,"dur":1}])",
      "long");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const auto& model = *loaded.model;
  ASSERT_GE(model.event_count(), 1u);
  EXPECT_EQ(model.event(0).ts_ns, 9223372036854774999);
  // Its 1 us would end it past the clock's range: cut to the range's end, and reported.
  EXPECT_EQ(model.event(0).end_ns(), INT64_MAX);
  EXPECT_EQ(model.format_problems,
            (std::vector<std::string>{"event 0: \"ts\" + \"dur\" is out of range", "event 1: \"ts\" is out of range",
                                      "event 2: \"ts\" is out of range", "event 3: \"ts\" is out of range"}));
}

// A B and its E (and a b and its e) at the two far ends of the clock's range: the slice lasts
// the longest time there is, not a negative one (the difference does not fit).
TEST(TraceVersionsTest, ABeginAndItsEndAtTheClocksFarEndsLastTheLongestTime) {
  auto loaded = analysis::load_trace_text(
      R"([{"ph":"B","name":"r","pid":1,"tid":1,"ts":-9223372036854774},)"
      R"( {"ph":"E","pid":1,"tid":1,"ts":9223372036854774},)"
      R"( {"ph":"b","cat":"c","id":1,"name":"a","pid":1,"tid":1,"ts":-9223372036854774},)"
      R"( {"ph":"e","cat":"c","id":1,"pid":1,"tid":1,"ts":9223372036854774}])",
      "far ends");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const auto& model = *loaded.model;
  ASSERT_EQ(model.event_count(), 4u);
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const auto& e = model.event(i);
    if (e.ph == 'B' || e.ph == 'b') {
      EXPECT_EQ(e.dur_ns, INT64_MAX) << e.ph;
    }
  }
}

// Kineto before April 2022 (PyTorch 1.8 to 1.11) named the GPU's categories "Kernel",
// "Memcpy" and "Memset", and the GPU annotation "gpu_user_Annotation"; before November 2021
// (PyTorch 1.8 to 1.10) its runtime calls were "Runtime".
TEST(TraceVersionsTest, Kineto2021CapitalisedCategoriesAreKernelsCopiesAnnotationsAndApiCalls) {
  const auto model = load(data_path("kineto_shape_2021.json"));
  ASSERT_TRUE(model);
  EXPECT_EQ(model->event_count(), 29u);
  const analysis::TraceStats stats = analysis::compute_stats(*model);
  ASSERT_EQ(stats.kernels.size(), 3u);
  EXPECT_EQ(stats.kernels[0].name.substr(0, 36), "void cudnn::cnn::conv2d_grouped_dire");
  EXPECT_EQ(stats.kernels[0].total_ns, 12000);
  EXPECT_EQ(stats.kernels[1].total_ns, 3000);
  EXPECT_EQ(stats.kernels[2].total_ns, 2000);
  EXPECT_EQ(stats.kernel_total_ns, 17000);
  ASSERT_EQ(stats.copies.size(), 2u);
  EXPECT_EQ(stats.copies[0].kind, "HtoD");
  EXPECT_EQ(stats.copies[0].bytes, 98304);
  EXPECT_EQ(stats.copies[0].total_ns, 6000);
  EXPECT_EQ(stats.copies[1].kind, "Memset");
  EXPECT_EQ(stats.copies[1].bytes, 2048);
  ASSERT_EQ(stats.gpu_annotations.size(), 1u);
  EXPECT_EQ(stats.gpu_annotations[0].name, "ProfilerStep#3");
  EXPECT_EQ(stats.gpu_annotations[0].total_ns, 118000);
  // Two "cuda_runtime" launches and the "Runtime" one, which is no other slice.
  const auto* launches = find(stats.api_calls, "cudaLaunchKernel");
  ASSERT_TRUE(launches);
  EXPECT_EQ(launches->count, 3);
  EXPECT_EQ(launches->total_ns, 15000);
  ASSERT_EQ(stats.api_calls.size(), 3u);
  EXPECT_TRUE(stats.other_slices.empty()) << stats.other_slices[0].name;
  // The "Runtime" launch is the slice its flow starts from, and the kernel it launched the one
  // the flow ends on: each kernel's launch call.
  const auto* fill = first(*model, 'X', "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor");
  ASSERT_TRUE(fill);
  int launched = 0;
  for (const auto& flow : model->flows()) {
    ASSERT_NE(flow.from_slice, analysis::kNoEvent);
    ASSERT_NE(flow.to_slice, analysis::kNoEvent);
    const auto& call = model->event(flow.from_slice);
    EXPECT_EQ(analysis::category_kind(model->cat(call)), analysis::EventKind::runtime) << model->cat(call);
    if (&model->event(flow.to_slice) != fill) continue;
    EXPECT_EQ(model->cat(call), "Runtime");
    EXPECT_EQ(model->name(call), "cudaLaunchKernel");
    EXPECT_EQ(call.ts_ns, 1638000000000060000);
    ++launched;
  }
  EXPECT_EQ(launched, 1);
  // The shared reading of categories (event_kind.h) gives the same kinds.
  const auto* kernel = first(*model, 'X', "void cudnn");
  ASSERT_TRUE(kernel);
  EXPECT_EQ(analysis::event_kind(model->cat(*kernel), kernel->ph), analysis::EventKind::kernel);
  EXPECT_EQ(analysis::event_kind("Memcpy", 'X'), analysis::EventKind::memcpy);
  EXPECT_EQ(analysis::event_kind("Memset", 'X'), analysis::EventKind::memset);
  EXPECT_EQ(analysis::event_kind("gpu_user_Annotation", 'X'), analysis::EventKind::gpu_annotation);
  EXPECT_EQ(analysis::event_kind("Runtime", 'X'), analysis::EventKind::runtime);
  // The GPU process is a device by its events, as a current Kineto trace's is.
  const auto& processes = model->processes();
  const auto gpu = std::find_if(processes.begin(), processes.end(), [](const analysis::TraceModel::Process& p) {
    return p.pid == 0 && p.pid_text == analysis::kNoString;
  });
  ASSERT_NE(gpu, processes.end()) << "the process of pid 0";
  EXPECT_EQ(gpu->device, 0);
}

// Writers that end every event with a comma and add the ']' afterwards (or by hand) leave
// ",]", as Sorbet's and olly's traces show: Perfetto reads them. So does the loader, with the
// comma reported; a trailing empty object ("{}" as a last element) is skipped and reported.
TEST(TraceVersionsTest, ACommaBeforeTheClosingBracketAndATrailingEmptyObjectAreReadAndReported) {
  const std::string event = R"({"name":"typecheck","cat":"kernel","ph":"X","ts":4619295550.000,"dur":8000.000,"pid":306339,"tid":3})";
  const std::string inputs[] = {
      "[\n" + event + ",\n]\n",                                    // array form
      "{\"traceEvents\": [\n" + event + ",\n],\n\"otherData\": {}}",  // object form, more after it
      "{\"traceEvents\": [" + event + ", {}]}",                      // a trailing empty object
  };
  for (const std::string& text : inputs) {
    SCOPED_TRACE(text);
    auto loaded = analysis::load_trace_text(text, "inline");
    ASSERT_TRUE(loaded.ok()) << loaded.error;
    const auto& model = *loaded.model;
    EXPECT_TRUE(model.complete);
    EXPECT_FALSE(model.cut_short);
    ASSERT_EQ(model.event_count(), 1u);
    const auto stats = analysis::compute_stats(model);
    ASSERT_EQ(stats.kernels.size(), 1u);
    EXPECT_EQ(stats.kernels[0].total_ns, 8000000);
    EXPECT_EQ(model.event(0).ts_ns, 4619295550000);
    ASSERT_EQ(model.format_problems.size(), 1u);
    EXPECT_EQ(analysis::validate_trace(model), model.format_problems) << "--check fails on what JSON does not allow";
  }
  auto comma = analysis::load_trace_text(inputs[0], "inline");
  EXPECT_EQ(comma.model->format_problems[0], "event 1: a ',' after the last event, before the events array's ']'");
  // Anything else after a comma is still not a trace.
  for (const std::string& bad : {"[" + event + ",,]", "[" + event + ", ]]", "[" + event + "}]"}) {
    const auto refused = analysis::load_trace_text(bad, "bad.json");
    EXPECT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.error.rfind("bad.json: byte ", 0), 0u) << refused.error;
  }
}

// Chrome's trace viewer computes with "ts" and "dur" as JavaScript does, and Perfetto coerces
// strings (CoerceToNs): a number written as a string is that number. Read so, and reported.
TEST(TraceVersionsTest, TimesWrittenAsStringsAreReadAsTheirNumbersAndReported) {
  auto loaded = analysis::load_trace_text(
      R"([{"ph":"X","cat":"kernel","name":"k","pid":"1","tid":"2","ts":"1666000000000143","dur":"2.5"},)"
      R"( {"ph":"X","cat":"kernel","name":"k","pid":"1","tid":"2","ts":"soon","dur":1}])",
      "strings");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const auto& model = *loaded.model;
  ASSERT_EQ(model.event_count(), 2u);
  EXPECT_EQ(model.event(0).ts_ns, 1666000000000143000);
  EXPECT_EQ(model.event(0).dur_ns, 2500);
  const auto stats = analysis::compute_stats(model);
  ASSERT_EQ(stats.kernels.size(), 1u);
  EXPECT_EQ(stats.kernels[0].count, 2);
  EXPECT_EQ(stats.kernels[0].total_ns, 3500);
  EXPECT_EQ(model.format_problems, (std::vector<std::string>{"event 0: \"ts\" is a string, read as the number it holds",
                                                             "event 0: \"dur\" is a string, read as the number it holds",
                                                             "event 1: \"ts\" is not a number"}));
}

// A writer that formats some events' ids as text gives one process's pid as 1 here and "1"
// there. Chrome's trace viewer keys processes and threads by their id's text (a JavaScript
// object), so both are one process and one thread; so they are here. Strings that are not
// how a number is written ("Spans", "07") stay ids of their own.
TEST(TraceVersionsTest, APidOrTidWrittenAsADecimalStringIsTheProcessAndThreadOfThatNumber) {
  auto loaded = analysis::load_trace_text(
      R"([{"ph":"M","name":"process_name","pid":"1","tid":0,"args":{"name":"trainer"}},)"
      R"( {"ph":"M","name":"thread_name","pid":1,"tid":"7","args":{"name":"main"}},)"
      R"( {"ph":"B","name":"step","cat":"user_annotation","pid":1,"tid":7,"ts":10},)"
      R"( {"ph":"X","name":"aten::mm","cat":"cpu_op","pid":"1","tid":"7","ts":12,"dur":3},)"
      R"( {"ph":"E","pid":"1","tid":"7","ts":20},)"
      R"( {"ph":"X","name":"aten::mm","cat":"cpu_op","pid":"Spans","tid":"07","ts":30,"dur":5}])",
      "mixed");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const auto& model = *loaded.model;
  ASSERT_EQ(model.processes().size(), 2u);
  const auto& process = model.processes()[0];
  EXPECT_EQ(process.pid, 1);
  EXPECT_EQ(process.pid_text, analysis::kNoString);
  EXPECT_EQ(model.string(process.name), "trainer");
  EXPECT_EQ(model.string(model.processes()[1].pid_text), "Spans");
  // One thread 7 (the process_name's tid 0 aside): the B written with numbers is closed by
  // the E written with strings, and the X between them nests in it.
  std::vector<const analysis::TraceModel::Track*> sevens;
  for (const auto& track : model.tracks())
    if (track.process == 0 && track.tid == 7) sevens.push_back(&track);
  ASSERT_EQ(sevens.size(), 1u);
  EXPECT_EQ(sevens[0]->tid_text, analysis::kNoString);
  EXPECT_EQ(model.string(sevens[0]->name), "main");
  ASSERT_EQ(sevens[0]->events.size(), 2u);
  const auto& step = model.event(sevens[0]->events[0]);
  EXPECT_EQ(model.name(step), "step");
  EXPECT_EQ(step.dur_ns, 10000);
  EXPECT_EQ(model.event(sevens[0]->events[1]).depth, 1);
  EXPECT_EQ(model.string(model.tracks()[model.event(5).track].tid_text), "07");
  const auto stats = analysis::compute_stats(model);
  ASSERT_EQ(stats.cpu_ops.size(), 1u);
  EXPECT_EQ(stats.cpu_ops[0].count, 2);
  EXPECT_EQ(stats.cpu_ops[0].total_ns, 8000);
  EXPECT_EQ(analysis::validate_trace(model), std::vector<std::string>{}) << "no E without its B";
  // The viewer's rows: one process "trainer (1)" with one thread row of two lanes.
  std::vector<std::string> rows;
  const auto index = analysis::TimelineIndex::build(model);  // rows() refers into it: not a temporary
  for (const auto& row : index.rows()) rows.push_back(row.label + "/" + std::to_string(row.lanes));
  EXPECT_EQ(rows, (std::vector<std::string>{"trainer (1)/1", "main/2", "process Spans/1", "thread 07/1"}));
  // Our own writer promises numbers: there the text is still reported.
  auto own = analysis::load_trace_text(
      R"({"cudascope":{"source":"test"},"traceEvents":[{"ph":"X","name":"k","pid":"1","tid":1,"ts":3,"dur":1}],)"
      R"("cudascopeSummary":{"complete":true}})",
      "own");
  ASSERT_TRUE(own.ok()) << own.error;
  EXPECT_EQ(own.model->processes().size(), 1u);
  EXPECT_EQ(analysis::validate_trace(*own.model), std::vector<std::string>{"event 0 (X): \"pid\" missing or not an integer"});
}

// Kineto writes its metadata and "traceName" after the events array, and releases before
// sanitizeStrForJSON wrote them unescaped: a Windows path ("C:\Users\...") or a quote in a
// metadata value leaves text after the events that is not JSON. The events array is whole,
// so its events are read; the damage is a format problem naming its byte (--check fails), and
// nothing after it is read. Damage before the array closes, or after the root, is refused.
TEST(TraceVersionsTest, DamageAfterAWholeEventsArrayKeepsTheEventsAndIsAFormatProblem) {
  const std::string text = read_text(data_path("kineto_shape_2022.json"));
  const std::string name = R"("traceName": "/tmp/profile/trainer_2201.1666000000000.pt.trace.json")";
  ASSERT_NE(text.find(name), std::string::npos);
  const std::string windows = R"("traceName": "C:\Users\dev\trainer_2201.pt.trace.json")";
  const std::string quote = R"("run": "the "baseline" run", )" + name;
  for (const auto& [damage, bad, why] :
       {std::tuple<std::string, std::string, std::string>{windows, "Users", "unknown escape in a string"},
        {quote, "baseline", "expected ',' or '}' after a member of the trace object"}}) {
    SCOPED_TRACE(damage);
    std::string damaged = text;
    damaged.replace(damaged.find(name), name.size(), damage);
    const std::size_t at = damaged.find(bad);
    const std::string problem = "byte " + std::to_string(at) + ": " + why +
                                " (after the events array: its events are read, the rest of the file is not)";
    const std::string path = temp_path("damaged_tail.json");
    write_text(path, damaged);
    auto loaded = analysis::load_trace(path);
    ASSERT_TRUE(loaded.ok()) << loaded.error;
    const auto& model = *loaded.model;
    EXPECT_EQ(model.event_count(), 38u);
    EXPECT_FALSE(model.cut_short);
    EXPECT_EQ(model.rank, 1) << "distributedInfo comes before the events";
    const auto stats = analysis::compute_stats(model);
    EXPECT_EQ(stats.kernel_total_ns, 37000);
    ASSERT_EQ(stats.copies.size(), 2u);
    EXPECT_EQ(stats.copies[0].bytes, 4096);
    EXPECT_EQ(model.format_problems, std::vector<std::string>{problem});
    EXPECT_EQ(analysis::validate_trace(model), std::vector<std::string>{problem});
    EXPECT_NE(std::find(model.notes.begin(), model.notes.end(), "1 format problem (see --check)"), model.notes.end())
        << ::testing::PrintToString(model.notes);
    // The viewer's follower reads it the same way, and is done with it.
    analysis::TraceFollower follower(path);
    EXPECT_EQ(follower.poll(), 38) << follower.error();
    EXPECT_TRUE(follower.finished());
    EXPECT_EQ(follower.model().format_problems, std::vector<std::string>{problem});
    // gzip: the rest is still read to the end, so a damaged member is refused as before.
    std::string gz = gzip(damaged);
    write_text(path + ".gz", gz);
    EXPECT_TRUE(analysis::load_trace(path + ".gz").ok());
    gz[gz.size() - 8] ^= 1;  // the CRC-32
    write_text(path + ".gz", gz);
    EXPECT_FALSE(analysis::load_trace(path + ".gz").ok());
    std::filesystem::remove(path);
    std::filesystem::remove(path + ".gz");
  }
  // Text after the root's end is not part of the trace (another document, junk): refused.
  auto trailing = analysis::load_trace_text(R"({"traceEvents":[]} {"traceEvents":[]})", "trailing");
  EXPECT_EQ(trailing.error, "trailing: byte 19: unexpected text after the end of the trace");
  // Our own trace whose summary is damaged does not say it is complete.
  auto own = analysis::load_trace_text(
      R"({"cudascope":{"source":"test"},"traceEvents":[{"ph":"X","name":"k","pid":1,"tid":1,"ts":3,"dur":1}],)"
      R"("cudascopeSummary":{"complete":tru}})",
      "own");
  ASSERT_TRUE(own.ok()) << own.error;
  EXPECT_EQ(own.model->event_count(), 1u);
  EXPECT_FALSE(own.model->complete);
  // Inside the events array the same damage refuses the file, naming the byte.
  std::string inside = text;
  inside.replace(inside.find("ampere_sgemm"), 0, "C:\\Users\\");
  const auto refused = analysis::load_trace_text(inside, "inside.json");
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.error, "inside.json: byte " + std::to_string(inside.find("Users")) + ": unknown escape in a string");
}
