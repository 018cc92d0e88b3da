// Files cut short anywhere: every cut point of small traces, and cuts at every kind of
// boundary (inside a string, a number, a key, between events, inside "args") of a Kineto
// trace. Each is read up to its last complete event, with a note, and nothing after it.
#include "trace_test_support.h"

#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace cudascope;
using namespace cudascope::trace_testing;

namespace {

// Byte offsets just past each element of the events array, found by a scanner that knows
// only strings and brackets: the oracle the loader's count is checked against.
struct Layout {
  std::size_t events_start = std::string::npos;  // just past the array's '['
  std::vector<std::size_t> event_ends;
};

Layout layout_of(const std::string& text) {
  Layout layout;
  const bool array_form = text.find_first_not_of(" \n\r\t") != std::string::npos && text[text.find_first_not_of(" \n\r\t")] == '[';
  const int events_depth = array_form ? 1 : 2;  // depth inside the events array
  int depth = 0;
  bool in_string = false;
  bool closed = false;  // the events array ended
  std::string last_key;
  std::size_t key_start = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') {
        in_string = false;
        if (depth == 1) last_key = text.substr(key_start, i - key_start);
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      key_start = i + 1;
    } else if (c == '{' || c == '[') {
      ++depth;
      if (depth == events_depth && layout.events_start == std::string::npos && (array_form || last_key == "traceEvents") && c == '[')
        layout.events_start = i + 1;
    } else if (c == '}' || c == ']') {
      if (depth == events_depth + 1 && layout.events_start != std::string::npos && !closed) layout.event_ends.push_back(i + 1);
      if (depth == events_depth && layout.events_start != std::string::npos) closed = true;
      --depth;
    }
  }
  return layout;
}

void expect_cut_reads_complete_events(const std::string& text, std::size_t cut, const Layout& layout,
                                      const analysis::TraceModel& full) {
  const std::string part = text.substr(0, cut);
  const auto loaded = analysis::load_trace_text(part, "cut");
  if (cut <= layout.events_start - 1 || cut < text.find_first_not_of(" \n\r\t") + 1) {
    // Cut before the events array opened: not a trace yet.
    EXPECT_FALSE(loaded.ok()) << "cut at " << cut;
    return;
  }
  ASSERT_TRUE(loaded.ok()) << "cut at " << cut << ": " << loaded.error;
  std::size_t complete = 0;
  while (complete < layout.event_ends.size() && layout.event_ends[complete] <= cut) ++complete;
  const auto& model = *loaded.model;
  ASSERT_EQ(model.event_count(), complete) << "cut at " << cut;
  if (cut < text.size() && text.find_first_not_of(" \n\r\t", cut) != std::string::npos) {
    EXPECT_TRUE(model.cut_short) << "cut at " << cut;
    ASSERT_FALSE(model.notes.empty());
    EXPECT_NE(model.notes[0].find("read up to its last complete event"), std::string::npos) << model.notes[0];
  }
  for (std::size_t i = 0; i < complete; ++i) {
    ASSERT_EQ(model.name(model.event(i)), full.name(full.event(i))) << "cut at " << cut << ", event " << i;
    ASSERT_EQ(model.event(i).ts_ns, full.event(i).ts_ns);
    ASSERT_EQ(model.args_json(model.event(i)), full.args_json(full.event(i)));
  }
  analysis::compute_stats(model);
  analysis::validate_trace(model);
}

}  // namespace

TEST(TraceTruncationTest, EveryCutOfSmallTracesReadsExactlyTheEventsBeforeIt) {
  for (const std::string name : {"trace_golden.json", "chrome_plain.json"}) {
    SCOPED_TRACE(name);
    const std::string text = read_text(data_path(name));
    const Layout layout = layout_of(text);
    ASSERT_NE(layout.events_start, std::string::npos);
    const auto full = analysis::load_trace_text(text, name);
    ASSERT_TRUE(full.ok()) << full.error;
    ASSERT_EQ(full.model->event_count(), layout.event_ends.size());
    for (std::size_t cut = 0; cut <= text.size(); ++cut) {
      expect_cut_reads_complete_events(text, cut, layout, *full.model);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

TEST(TraceTruncationTest, KinetoTraceCutAtEveryKindOfBoundary) {
  // A re-save without indentation keeps the file small enough to cut many times.
  const std::string text = read_text(data_path("kineto_train_h100_s2.json.gz"));
  const Layout layout = layout_of(text);
  const auto full = analysis::load_trace_text(text, "kineto");
  ASSERT_TRUE(full.ok()) << full.error;
  ASSERT_EQ(full.model->event_count(), layout.event_ends.size());
  // For each kind of byte, cuts just before and after its first 40 occurrences in the events.
  std::vector<std::size_t> cuts = {layout.events_start - 1, layout.events_start, text.size() - 1, text.size() - 2};
  for (const char kind : std::string("{}[],:\" .0123456789eatX\\\n")) {
    int taken = 0;
    for (std::size_t i = layout.events_start; i < text.size() && taken < 40; i += 97) {
      const std::size_t at = text.find(kind, i);
      if (at == std::string::npos) break;
      cuts.push_back(at);
      cuts.push_back(at + 1);
      i = at;
      ++taken;
    }
  }
  for (const std::size_t end : layout.event_ends) {
    if (end % 7 == 0) {
      cuts.push_back(end);
      cuts.push_back(end - 1);
    }
  }
  ASSERT_GT(cuts.size(), 500u);
  for (const std::size_t cut : cuts) {
    expect_cut_reads_complete_events(text, cut, layout, *full.model);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

TEST(TraceTruncationTest, AGzipStreamCutShortReadsWhatItHolds) {
  const std::string text = read_text(data_path("kineto_train_h100_s3.json.gz"));
  const std::string zipped = gzip(text);
  const auto full = analysis::load_trace_text(text, "full");
  ASSERT_TRUE(full.ok());
  std::size_t previous = 0;
  for (std::size_t cut = zipped.size() / 10; cut < zipped.size(); cut += zipped.size() / 10) {
    const auto loaded = analysis::load_trace_text(zipped.substr(0, cut), "cut.gz");
    ASSERT_TRUE(loaded.ok()) << loaded.error;
    EXPECT_TRUE(loaded.model->cut_short);
    EXPECT_GE(loaded.model->event_count(), previous) << "more of the stream, more events";
    EXPECT_LE(loaded.model->event_count(), full.model->event_count());
    ASSERT_FALSE(loaded.model->notes.empty());
    EXPECT_NE(loaded.model->notes[0].find("gzip"), std::string::npos) << loaded.model->notes[0];
    previous = loaded.model->event_count();
  }
  EXPECT_GT(previous, full.model->event_count() / 2);
}
