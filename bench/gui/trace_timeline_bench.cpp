// Trace timeline benchmarks on a large generated trace (bench/analysis's Kineto-shaped
// generator; ~10M events): redraw of the whole timeline widget at zoom levels from the whole
// trace down to microseconds, search over all events (substring, rare name, regex) with
// next/previous, range summaries, the index build, and (for rank traces) what each follow step
// of rank files still being written redoes: the merge of every rank and both indexes. The trace is read once by the
// analysis library's loader (its own benchmark times that).
//   CUDASCOPE_BENCH_TRACE=trace.json gui_trace_timeline_bench
//   CUDASCOPE_BENCH_TRACE=r/trace_0.json:r/trace_1.json:... gui_trace_timeline_bench   (ranks as one timeline)
#include <cudascope/analysis/timeline_summary.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/gui/rank_timeline.h>
#include <cudascope/gui/trace_document.h>
#include <cudascope/gui/trace_timeline_view.h>

#include <QApplication>
#include <QFileInfo>
#include <QRegularExpression>

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace {

using namespace cudascope;

struct Fixture {
  std::unique_ptr<gui::TraceDocument> doc;
  std::unique_ptr<gui::TraceTimelineView> view;
};

// One trace, or several rank traces (paths separated by ':') opened as one timeline, as
// `cudascope-viewer trace_0.json trace_1.json ...` opens them.
std::unique_ptr<gui::LoadedTrace> load(const QString& paths, QString& error) {
  const QStringList list = paths.split(QLatin1Char(':'), Qt::SkipEmptyParts);
  for (const QString& p : list) {
    if (!QFileInfo::exists(p)) {  // the loader would wait for it to appear (follow mode)
      error = p + QStringLiteral(": no such file");
      return nullptr;
    }
  }
  bool cancelled = false;
  if (list.size() == 1) return gui::load_trace_for_view(list.front(), {}, error, cancelled);
  QStringList errors;
  auto docs = gui::load_traces_for_view(list, {}, errors, cancelled);
  if (docs.size() != 1 || !errors.isEmpty()) {
    error = QStringLiteral("%1 files made %2 documents, not one rank timeline: %3")
                .arg(list.size())
                .arg(docs.size())
                .arg(errors.join(QStringLiteral("; ")));
    return nullptr;
  }
  return std::move(docs.front().trace);
}

Fixture& fixture() {
  static Fixture f = [] {
    const char* env = std::getenv("CUDASCOPE_BENCH_TRACE");
    const QString path = env ? env : CUDASCOPE_BENCH_TRACE_DEFAULT;
    QString error;
    auto loaded = load(path, error);
    if (!loaded) {
      std::fprintf(stderr, "%s\n(the default input is made by `cmake --build BUILD --target gui_trace_bench_data`)\n",
                   error.toUtf8().constData());
      std::exit(1);
    }
    std::fprintf(stderr, "%s: %zu events, %zu rows, %zu ranks; read %.2f s, timeline index + search index %.2f s (%.0f + %.0f MiB)\n",
                 path.toUtf8().constData(), loaded->trace().event_count(), loaded->index.rows().size(),
                 loaded->ranks.size(), loaded->load_seconds, loaded->index_seconds,
                 loaded->index.memory_bytes() / 1048576.0, loaded->search->memory_bytes() / 1048576.0);
    Fixture out;
    out.doc = std::make_unique<gui::TraceDocument>(path.section(QLatin1Char(':'), 0, 0), std::move(loaded));
    out.doc->setFollowing(false);
    out.view = std::make_unique<gui::TraceTimelineView>();
    out.view->setDocument(out.doc.get());
    out.view->resize(1600, 900);
    return out;
  }();
  return f;
}

// A kernel near the middle of the trace: the frames below are centred on it.
quint32 middle_kernel(const analysis::TraceModel& m) {
  for (std::size_t i = m.event_count() / 2; i < m.event_count(); ++i)
    if (m.cat(m.event(i)) == "kernel") return quint32(i);
  return 0;
}

// The whole widget (ruler, rows, labels, runs, flows) painted into a 1600x900 image, showing
// 1/10^zoom of the trace centred on a kernel in the middle of the trace. Arg 1 picks what is
// on screen: 0 the rows from the top (processes, first lanes), 1 the lanes around that kernel,
// selected (its flow arrow drawn), 2 the CPU threads.
void BM_Redraw(benchmark::State& state) {
  auto& f = fixture();
  const auto& m = f.doc->model();
  const auto& index = f.doc->index();
  static const quint32 kernel = middle_kernel(m);
  const double span = double(index.end_ns() - index.begin_ns()) / std::pow(10.0, double(state.range(0)));
  const double mid = double(m.event(kernel).ts_ns);
  f.view->selectEvent(gui::TraceTimelineView::kNone);
  if (state.range(1) == 0) f.view->scrollToRow(0);
  if (state.range(1) == 1) {
    f.view->selectEvent(kernel, true);
    f.view->scrollToRow(index.row_of_track(m.event(kernel).track), m.event(kernel).depth);
  }
  if (state.range(1) == 2)
    for (quint32 r = 0; r < index.rows().size(); ++r)
      if (index.rows()[r].kind == analysis::TimelineRow::Kind::slices && !index.rows()[r].gpu) {
        f.view->scrollToRow(r > 0 ? r - 1 : r);
        break;
      }
  f.view->setRange(qint64(mid - span / 2), qint64(mid + span / 2));
  size_t items = 0, merged = 0, events = 0;
  for (auto _ : state) {
    QImage image = f.view->render(QSize(1600, 900));
    benchmark::DoNotOptimize(image.constBits());
  }
  for (const auto& it : f.view->paintedItems()) items++, merged += it.item.merged(), events += it.item.count;
  state.counters["items"] = double(items);
  state.counters["merged"] = double(merged);
  state.counters["events"] = double(events);
  state.counters["span_ms"] = double(f.view->rangeEnd() - f.view->rangeBegin()) / 1e6;
}
BENCHMARK(BM_Redraw)
    ->ArgsProduct({{0, 2, 4, 6, 8}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.5);

void search(benchmark::State& state, const char* text, bool regex, bool qt = false) {
  auto& f = fixture();
  const auto& s = f.doc->search();
  analysis::SearchMatches m;
  analysis::SearchQuery query{text, regex, false, {}};
  if (qt) {  // as the viewer does it
    QRegularExpression re(QString::fromUtf8(text), QRegularExpression::CaseInsensitiveOption);
    re.optimize();
    query.matcher = [re](std::string_view name) {
      return re.match(QString::fromUtf8(name.data(), qsizetype(name.size()))).hasMatch();
    };
  }
  for (auto _ : state) {
    m = s.find(query);
    benchmark::DoNotOptimize(m.count);
  }
  state.counters["matches"] = double(m.count);
  state.counters["names"] = double(m.names.size());
  state.counters["events"] = double(s.event_count());
}
void BM_SearchCommonSubstring(benchmark::State& state) { search(state, "aten::", false); }
void BM_SearchRareSubstring(benchmark::State& state) { search(state, "gemm_f32f32_f32f32_f32_nt_n_tilesize32x32x8", false); }
void BM_SearchRegex(benchmark::State& state) { search(state, "^void at::native::.*elementwise.*<[0-9]+,", true); }
void BM_SearchRegexQt(benchmark::State& state) { search(state, "^void at::native::.*elementwise.*<[0-9]+,", true, true); }
BENCHMARK(BM_SearchCommonSubstring)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SearchRareSubstring)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SearchRegex)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SearchRegexQt)->Unit(benchmark::kMillisecond);

// Next from the middle of the trace over a query matching many names.
void BM_SearchNext(benchmark::State& state) {
  auto& f = fixture();
  const auto& s = f.doc->search();
  const auto m = s.find({"aten::", false, false});
  const std::int64_t mid = (f.doc->index().begin_ns() + f.doc->index().end_ns()) / 2;
  for (auto _ : state) benchmark::DoNotOptimize(s.next(m, mid, 0));
  state.counters["names"] = double(m.names.size());
}
BENCHMARK(BM_SearchNext)->Unit(benchmark::kMicrosecond);

void BM_RangeSummary(benchmark::State& state) {
  auto& f = fixture();
  const auto& index = f.doc->index();
  const std::int64_t span = (index.end_ns() - index.begin_ns()) / state.range(0);
  const std::int64_t t0 = index.begin_ns() + (index.end_ns() - index.begin_ns() - span) / 2;
  for (auto _ : state) benchmark::DoNotOptimize(analysis::summarize_range(f.doc->model(), index, t0, t0 + span));
}
BENCHMARK(BM_RangeSummary)->Arg(1)->Arg(100)->Unit(benchmark::kMillisecond);

void BM_IndexBuild(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(analysis::TimelineIndex::build(f.doc->model()).rows().size());
}
BENCHMARK(BM_IndexBuild)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_SearchIndexBuild(benchmark::State& state) {
  auto& f = fixture();
  for (auto _ : state) benchmark::DoNotOptimize(analysis::TimelineSearch::build(f.doc->model()).event_count());
}
BENCHMARK(BM_SearchIndexBuild)->Unit(benchmark::kMillisecond)->Iterations(2);

// A follow step of rank files still being written merges every rank again and rebuilds both
// indexes (TraceDocument): its cost, on the ranks as read whole. Skipped for a single trace.
void BM_RankFollowStepRemerge(benchmark::State& state) {
  const char* env = std::getenv("CUDASCOPE_BENCH_TRACE");
  const QStringList paths = QString(env ? env : "").split(QLatin1Char(':'), Qt::SkipEmptyParts);
  if (paths.size() < 2) {
    state.SkipWithError("CUDASCOPE_BENCH_TRACE names one trace, not rank traces");
    return;
  }
  static const auto models = [&] {
    std::vector<std::unique_ptr<analysis::TraceModel>> out;
    for (const QString& p : paths) out.push_back(analysis::load_trace(p.toStdString()).model);
    return out;
  }();
  std::vector<gui::RankSource> ranks;
  for (int i = 0; i < paths.size(); ++i) {
    if (!models[static_cast<std::size_t>(i)]) {
      state.SkipWithError("a rank trace failed to load");
      return;
    }
    ranks.push_back({paths[i], models[static_cast<std::size_t>(i)].get()});
  }
  std::size_t events = 0;
  for (auto _ : state) {
    const gui::MergedRankTimeline merged = gui::merge_rank_traces(ranks);
    events = merged.model->event_count();
    benchmark::DoNotOptimize(analysis::TimelineIndex::build(*merged.model).rows().size());
    benchmark::DoNotOptimize(analysis::TimelineSearch::build(*merged.model).event_count());
  }
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_RankFollowStepRemerge)->Unit(benchmark::kMillisecond)->Iterations(5)->Repetitions(3);

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  fixture();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
