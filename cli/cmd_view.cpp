// `cudascope view FILE...`: opens the Qt viewer on snapshots and traces (told apart by
// content, each trace in its own tab) by exec'ing cudascope-viewer, looked up next to this
// executable first, then on PATH.
#include "checks.h"
#include "command.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

std::string find_viewer() {
  char self[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    std::string dir(self, static_cast<size_t>(n));
    dir = dir.substr(0, dir.rfind('/'));
    if (executable(dir + "/cudascope-viewer")) return dir + "/cudascope-viewer";
  }
  if (const char* path = std::getenv("PATH")) {
    std::string all(path);
    size_t start = 0;
    while (start <= all.size()) {
      const size_t end = std::min(all.find(':', start), all.size());
      const std::string candidate = all.substr(start, end - start) + "/cudascope-viewer";
      if (end > start && executable(candidate)) return candidate;
      start = end + 1;
    }
  }
  return {};
}

}  // namespace

CUDASCOPE_COMMAND(view, 61) {
  struct Options {
    std::vector<std::string> files;
    std::string compare;
    std::string screenshot, select;
    int match = 0;
  };
  auto options = std::make_shared<Options>();
  CLI::App* sub = app.add_subcommand(
      "view", "Open allocator snapshots and traces in the desktop viewer (cudascope-viewer); a trace still being "
              "written by `cudascope run` is shown growing");
  sub->add_option("FILE", options->files,
                  "snapshots (PyTorch pickle or cudascope JSON) or traces (cudascope run, torch.profiler, Chrome "
                  "trace-event JSON), plain or gzip; the kind is read from the content")
      ->required();
  sub->add_option("--compare", options->compare, "a second snapshot to compare against FILE")->check(CLI::ExistingFile);
  CLI::Option* screenshot = sub->add_option(
      "--screenshot", options->screenshot,
      "once the files are shown, save the window as this PNG and quit (without a display, drawn offscreen)")
      ->check(cudascope::cli::WritableFile());
  CLI::Option* select = sub->add_option("--select", options->select,
                                        "with --screenshot: select the first event whose name contains TEXT, as the "
                                        "viewer's search box does (zoomed to, its details shown)")
                            ->needs(screenshot);
  sub->add_option("--match", options->match, "with --select: the N-th such event instead of the first")
      ->check(CLI::Range(1, 1000000))
      ->needs(select);
  sub->callback([options] {
    for (const std::string& file : options->files)
      if (access(file.c_str(), R_OK) != 0) {
        std::fprintf(stderr, "cudascope view: error: %s: %s\n", file.c_str(), std::strerror(errno));
        cudascope::cli::set_exit_code(1);
        return;
      }
    const std::string viewer = find_viewer();
    if (viewer.empty()) {
      std::fprintf(stderr,
                   "cudascope view: error: cudascope-viewer was not found next to cudascope or on PATH; it is built "
                   "only when Qt 6 is available (apt-get install qt6-base-dev, then rebuild with "
                   "-DCUDASCOPE_WITH_GUI=ON)\n");
      cudascope::cli::set_exit_code(2);
      return;
    }
    std::vector<std::string> args = {viewer};
    args.insert(args.end(), options->files.begin(), options->files.end());
    if (!options->compare.empty()) args.insert(args.end(), {"--compare", options->compare});
    if (!options->screenshot.empty()) args.insert(args.end(), {"--screenshot", options->screenshot});
    if (!options->select.empty()) args.insert(args.end(), {"--select", options->select});
    if (options->match > 0) args.insert(args.end(), {"--match", std::to_string(options->match)});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::fflush(nullptr);
    execv(viewer.c_str(), argv.data());
    std::fprintf(stderr, "cudascope view: error: cannot run %s: %s\n", viewer.c_str(), std::strerror(errno));
    cudascope::cli::set_exit_code(2);
  });
}
