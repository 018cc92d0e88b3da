// Entry points of the trace side of the analysis library that the viewer uses and no other
// test called: counter columns and their scale, matches in a time range, numeric args,
// moving a model, and the memory figures the budgets rely on.
#include <cudascope/analysis/timeline_index.h>
#include <cudascope/analysis/timeline_search.h>
#include <cudascope/analysis/trace_loader.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>

namespace cudascope::analysis {
namespace {

std::unique_ptr<TraceModel> load_text(const std::string& text) {
  auto result = load_trace_text(text, "generated");
  EXPECT_TRUE(result.ok()) << result.error;
  return std::move(result.model);
}

// A counter sampled at 15, 25, 35 and 36 us (values 5, 9, 3, 7), beside slices.
const char* kCounterTrace = R"({"traceEvents":[
  {"ph":"C","name":"Memory","pid":1,"ts":15,"args":{"bytes":5}},
  {"ph":"C","name":"Memory","pid":1,"ts":25,"args":{"bytes":9}},
  {"ph":"C","name":"Memory","pid":1,"ts":35,"args":{"bytes":3}},
  {"ph":"C","name":"Memory","pid":1,"ts":36,"args":{"bytes":7}},
  {"ph":"X","name":"step","pid":1,"tid":2,"ts":10,"dur":10,"args":{"ratio":0.25,"count":3,"label":"a"}},
  {"ph":"X","name":"step","pid":1,"tid":2,"ts":30,"dur":5},
  {"ph":"X","name":"other","pid":1,"tid":2,"ts":22,"dur":1}
]})";

std::uint32_t counter_row(const TimelineIndex& index) {
  for (std::uint32_t r = 0; r < index.rows().size(); ++r)
    if (index.rows()[r].kind == TimelineRow::Kind::counter) return r;
  ADD_FAILURE() << "no counter row";
  return 0;
}

TEST(TraceEntryPointsTest, CounterColumnsTakeEachColumnsLargestSampleAndCarryTheLastOne) {
  const auto model = load_text(kCounterTrace);
  const auto index = TimelineIndex::build(*model);
  const std::uint32_t row = counter_row(index);
  EXPECT_EQ(index.counter_max(*model, row), 9.0);
  std::vector<double> columns;
  // Five 10 us columns from 0: nothing yet, 5, 9, then 9 again (the value held until the
  // sample at 35 us; 3 and 7 are lower), then 7 carried on.
  index.counter_columns(*model, row, 0, 50'000, 5, columns);
  ASSERT_EQ(columns.size(), 5u);
  EXPECT_TRUE(std::isnan(columns[0]));
  EXPECT_EQ(columns[1], 5.0);
  EXPECT_EQ(columns[2], 9.0);
  EXPECT_EQ(columns[3], 9.0);
  EXPECT_EQ(columns[4], 7.0);
  // A range starting between samples begins with the value in force there; a column holding
  // only later samples takes their largest.
  index.counter_columns(*model, row, 30'000, 34'000, 2, columns);
  EXPECT_EQ(columns, (std::vector<double>{9.0, 9.0}));
  index.counter_columns(*model, row, 35'000, 45'000, 2, columns);
  EXPECT_EQ(columns, (std::vector<double>{7.0, 7.0}));
  // A slices row is not a counter: all NaN, scale 0.
  const std::uint32_t slices = index.row_of_track(0);
  ASSERT_NE(slices, counter_row(index));
  index.counter_columns(*model, slices, 0, 50'000, 3, columns);
  EXPECT_TRUE(std::isnan(columns[0]) && std::isnan(columns[1]) && std::isnan(columns[2]));
  EXPECT_EQ(index.counter_max(*model, slices), 0.0);
}

TEST(TraceEntryPointsTest, MatchesInARangeAreThoseStartingInsideItInTimeOrder) {
  const auto model = load_text(kCounterTrace);
  const auto search = TimelineSearch::build(*model);
  SearchQuery query;
  query.text = "step";
  const SearchMatches matches = search.find(query);
  ASSERT_EQ(matches.count, 2u);
  auto starts = [&](const std::vector<std::uint32_t>& events) {
    std::vector<std::int64_t> out;
    for (std::uint32_t e : events) out.push_back(model->event(e).ts_ns);
    return out;
  };
  EXPECT_EQ(starts(search.in_range(matches, 0, 100'000, 10)), (std::vector<std::int64_t>{10'000, 30'000}));
  EXPECT_EQ(starts(search.in_range(matches, 11'000, 100'000, 10)), (std::vector<std::int64_t>{30'000}));
  EXPECT_EQ(starts(search.in_range(matches, 0, 100'000, 1)), (std::vector<std::int64_t>{10'000})) << "the limit";
  EXPECT_TRUE(search.in_range(matches, 40'000, 100'000, 10).empty());
  EXPECT_GT(search.memory_bytes(), 0u);
}

TEST(TraceEntryPointsTest, NumericArgsParseOnDemandAndOtherTypesAreAbsent) {
  const auto model = load_text(kCounterTrace);
  const TraceModel::Event* first_step = nullptr;
  for (std::size_t i = 0; i < model->event_count(); ++i)
    if (model->name(model->event(i)) == "step") {
      first_step = &model->event(i);
      break;
    }
  ASSERT_NE(first_step, nullptr);
  EXPECT_EQ(model->arg_number(*first_step, "ratio"), 0.25);
  EXPECT_EQ(model->arg_number(*first_step, "count"), 3.0);
  EXPECT_FALSE(model->arg_number(*first_step, "label").has_value()) << "a string is not a number";
  EXPECT_FALSE(model->arg_number(*first_step, "missing").has_value());
}

TEST(TraceEntryPointsTest, AMovedModelKeepsItsEventsStringsAndMemoryFigure) {
  auto model = load_text(kCounterTrace);
  const std::size_t events = model->event_count();
  const std::size_t bytes = model->memory_bytes();
  EXPECT_GT(bytes, events * sizeof(TraceModel::Event) / 2);
  TraceModel moved(std::move(*model));
  EXPECT_EQ(moved.event_count(), events);
  EXPECT_EQ(moved.memory_bytes(), bytes);
  EXPECT_EQ(moved.name(moved.event(events - 1)), "other");
  TraceModel assigned;
  assigned = std::move(moved);
  EXPECT_EQ(assigned.event_count(), events);
  EXPECT_EQ(assigned.counters().size(), 1u);
  EXPECT_EQ(assigned.counters()[0].series[0].values.size(), 4u);
  const auto index = TimelineIndex::build(assigned);
  EXPECT_GT(index.memory_bytes(), 0u);
}

}  // namespace
}  // namespace cudascope::analysis
