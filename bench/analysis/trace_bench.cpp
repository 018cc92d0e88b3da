// Times loading and indexing a trace into the model, and the stats over it, and reports the
// peak resident memory against the file's size:
//   trace_bench TRACE.json [--repeat N]
// One line per phase; the figures for bench/results/trace.md. A plain timed program rather
// than Google Benchmark: one load of a 1 GB file is the measurement, and peak RSS is per process.
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>

#include <sys/resource.h>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

namespace {

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// CPU time of this process: on a shared machine (load above the core count) wall time
// measures the neighbours; both are printed.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

std::string load_average() {
  std::FILE* f = std::fopen("/proc/loadavg", "r");
  char text[128] = "?\n";
  if (f != nullptr) {
    if (std::fgets(text, sizeof text, f) == nullptr) text[0] = 0;
    std::fclose(f);
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: %s TRACE.json [--repeat N]\n", argv[0]);
    return argc < 2 ? 2 : 0;
  }
  const std::string path = argv[1];
  const int repeat = argc > 3 && std::strcmp(argv[2], "--repeat") == 0 ? std::atoi(argv[3]) : 1;
  const double file_mib = static_cast<double>(std::filesystem::file_size(path)) / (1 << 20);
  std::printf("file: %s, %.1f MiB\n", path.c_str(), file_mib);
  for (int round = 0; round < repeat; ++round) {
    const auto start = std::chrono::steady_clock::now();
    const double cpu_start = cpu_seconds();
    auto loaded = cudascope::analysis::load_trace(path);
    const double load_s = seconds_since(start);
    const double load_cpu_s = cpu_seconds() - cpu_start;
    if (!loaded.ok()) {
      std::fprintf(stderr, "%s\n", loaded.error.c_str());
      return 1;
    }
    const auto& model = *loaded.model;
    std::printf("load+index: %.2f s wall, %.2f s CPU (%.0f MiB/s of CPU), %zu events, %zu tracks, %zu flows, %zu strings\n", load_s,
                load_cpu_s, static_cast<double>(model.input_bytes) / (1 << 20) / load_cpu_s, model.event_count(), model.tracks().size(),
                model.flows().size(), model.strings().size());
    std::printf("model: %.1f MiB (%.2fx the file); peak RSS so far %.1f MiB (%.2fx the file)\n",
                static_cast<double>(model.memory_bytes()) / (1 << 20), static_cast<double>(model.memory_bytes()) / (1 << 20) / file_mib,
                peak_rss_mib(), peak_rss_mib() / file_mib);
    const auto stats_start = std::chrono::steady_clock::now();
    const double stats_cpu_start = cpu_seconds();
    const auto stats = cudascope::analysis::compute_stats(model);
    const std::string table = cudascope::analysis::format_stats(stats, cudascope::analysis::StatsFormat::table);
    std::printf("stats over the model: %.2f s wall, %.2f s CPU (%zu kernel names, %zu table bytes)\n", seconds_since(stats_start),
                cpu_seconds() - stats_cpu_start, stats.kernels.size(),
                table.size());
  }
  std::printf("peak RSS: %.1f MiB (%.2fx the file); load average %s", peak_rss_mib(), peak_rss_mib() / file_mib, load_average().c_str());
  return 0;
}
