// Viewer benchmarks on a snapshot grown from the H200 fixture to ~1M trace entries
// (make_big_snapshot.py): load + index time and peak memory against the file size, and
// timeline redraw time at full zoom-out and zoomed in (core render and the whole widget).
#include <cudascope/gui/loaded_snapshot.h>
#include <cudascope/gui/timeline_view.h>
#include <cudascope/analysis/allocator_replay.h>
#include <cudascope/analysis/loader.h>

#include <QApplication>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

using namespace cudascope;

std::string snapshot_path() {
  const char* env = std::getenv("CUDASCOPE_BENCH_SNAPSHOT");
  return env ? env : CUDASCOPE_BENCH_SNAPSHOT_DEFAULT;
}

std::shared_ptr<const gui::LoadedSnapshot> load_and_index(const std::string& path) {
  auto r = analysis::load_snapshot(path);
  if (!r) {
    std::fprintf(stderr, "%s\n(the default input is made by `cmake --build BUILD --target gui_bench_data`)\n",
                 r.error().message().c_str());
    std::exit(1);
  }
  auto loaded = gui::index_snapshot(std::move(r).value());
  analysis::AllocatorReplay replay(*loaded->snapshot, loaded->device);  // the state view's checkpoints
  benchmark::DoNotOptimize(replay.spacing());
  return loaded;
}

long rss_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  return 0;
}

// Peak memory of load + index, measured in a fresh child so earlier runs do not count.
double peak_load_mb(const std::string& path, double& baseline_mb) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    long before[2] = {rss_kb("VmRSS:"), 0};
    auto loaded = load_and_index(path);
    before[1] = rss_kb("VmHWM:");
    if (write(fds[1], before, sizeof before) != sizeof before) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  long kb[2] = {0, 0};
  const bool ok = read(fds[0], kb, sizeof kb) == sizeof kb;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  baseline_mb = kb[0] / 1024.0;
  return ok ? (kb[1] - kb[0]) / 1024.0 : -1;
}

void BM_LoadAndIndex(benchmark::State& state) {
  const std::string path = snapshot_path();
  // Before any load in this process: freed heap from timed runs would hide the child's growth.
  double baseline = 0;
  const double peak = peak_load_mb(path, baseline);
  size_t entries = 0;
  for (auto _ : state) {
    auto loaded = load_and_index(path);
    entries = loaded->snapshot->trace.size();
  }
  struct stat st {};
  stat(path.c_str(), &st);
  state.counters["trace_entries"] = double(entries);
  state.counters["file_MB"] = double(st.st_size) / (1 << 20);
  state.counters["peak_extra_MB"] = peak;
  state.counters["peak_per_file_size"] = peak / (double(st.st_size) / (1 << 20));
}
BENCHMARK(BM_LoadAndIndex)->Unit(benchmark::kMillisecond)->Iterations(3);

std::shared_ptr<const gui::LoadedSnapshot>& shared() {
  static auto loaded = load_and_index(snapshot_path());
  return loaded;
}

// StackedTimeline::render alone, 1600x600 plot, at the zoom given as a fraction of the trace.
void BM_TimelineRender(benchmark::State& state) {
  const auto& t = *shared()->allocations;
  const double fraction = 1.0 / double(state.range(0));
  const int64_t span = std::max<int64_t>(1, int64_t(double(t.end_us() - t.begin_us()) * fraction));
  const int64_t t0 = t.begin_us() + (t.end_us() - t.begin_us() - span) * 3 / 4;  // inside the busy part
  std::vector<uint32_t> pixels(1600 * 600);
  std::vector<analysis::TimelineColumn> columns;
  for (auto _ : state) {
    t.render(analysis::TimelineView{t0, t0 + span, t.peak_bytes(), 1600, 600}, pixels.data(), 1600, &columns);
    benchmark::ClobberMemory();
  }
  state.counters["intervals"] = double(t.intervals().size());
  state.counters["checkpoint_spacing"] = double(t.checkpoint_spacing());
}
BENCHMARK(BM_TimelineRender)->Arg(1)->Arg(10)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

// The whole widget repaint (plot, churn strip, axes) through Qt's offscreen platform.
void BM_TimelineWidgetRepaint(benchmark::State& state) {
  gui::TimelineView view;
  view.resize(1700, 700);
  view.setTimeline(shared(), shared()->allocations, "bench");
  if (state.range(0) > 1) view.zoom(double(state.range(0)), 0.75);
  for (auto _ : state) {
    QImage image = view.grab().toImage();
    benchmark::DoNotOptimize(image.bits());
  }
}
BENCHMARK(BM_TimelineWidgetRepaint)->Arg(1)->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
