// The commands end to end, as a user runs them, each checked on what it prints or writes
// against a reference made elsewhere: replay (PyTorch's memory_stats), stats (the tables
// kept beside the traces, --csv, --check), snapshot-stats' text (the Python-made figures),
// serve (scraped over real HTTP), run --activities (only the chosen kinds in the trace).
#include "clean_environment.h"
#include "run_cli.h"
#include "../metrics/metrics_text.h"

#include <cudascope/util/byte_source.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace cudascope::testing {
namespace {

using ::testing::HasSubstr;

// The commands run with only what each test gives them: none of the caller's CUDASCOPE_* or
// PYTORCH_CUDA_ALLOC_CONF (put back when the tests end).
[[maybe_unused]] const auto* const clean_environment =
    ::testing::AddGlobalTestEnvironment(new CleanEnvironmentForAllTests());

std::string data(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA_DIR) + "/" + name; }
std::string temp(const std::string& name) { return ::testing::TempDir() + "cli_e2e_" + name; }

std::string read(const std::string& path) {
  std::string error;
  std::string text = util::read_file(path, std::uint64_t{1} << 30, error);
  EXPECT_EQ(error, "") << path;
  return text;
}

TEST(CliE2eTest, ReplayWritesPyTorchsMemoryStatsAndTheSummary) {
  const std::string out = temp("replay_stats.json");
  const auto r = run_cli("CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_MEMORY=128GiB",
                         "replay " + data("replay_max_split_s2.jsonl.gz") + " --stats-json " + out + " --summary");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto ours = nlohmann::json::parse(read(out));
  const auto torch = nlohmann::json::parse(read(data("replay_max_split_s2.stats.json.gz")));
  ASSERT_EQ(torch.size(), 122u);
  EXPECT_EQ(ours, torch) << "every memory_stats key as PyTorch reported it";
  // --summary: PyTorch's table on stderr, with the peak the stats hold.
  EXPECT_THAT(r.output, HasSubstr("PyTorch CUDA memory summary, device ID 0"));
  EXPECT_THAT(r.output, HasSubstr("CUDA OOMs: " + std::to_string(torch["num_ooms"].get<long long>())));
}

// --snapshot: the history of the whole replay, one segment_alloc per cudaMalloc and one
// segment_free per cudaFree the stats count, one alloc per allocation, each segment at an
// address of its own; and the segments the sequence ends with, as the stats count them (the
// snapshot is taken before the replay frees what is left, which the sequence never did).
TEST(CliE2eTest, ReplayWritesTheSnapshotOfItsHistory) {
  const std::string stats_path = temp("replay_history_stats.json"), snapshot_path = temp("replay_history.json");
  const auto r = run_cli("CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_MEMORY=128GiB", "replay " + data("replay_default_s1.jsonl.gz") +
                                                                                " --stats-json " + stats_path +
                                                                                " --snapshot " + snapshot_path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto stats = nlohmann::json::parse(read(stats_path));
  const auto snapshot = nlohmann::json::parse(read(snapshot_path));
  ASSERT_TRUE(snapshot.contains("device_traces")) << snapshot.dump().substr(0, 300);
  std::map<std::string, long long> actions;
  std::set<std::uint64_t> live_segments;
  bool segment_reused_while_live = false;
  for (const auto& entry : snapshot["device_traces"][0]) {
    const std::string action = entry["action"];
    actions[action]++;
    const auto addr = entry["addr"].get<std::uint64_t>();
    if (action == "segment_alloc") segment_reused_while_live |= !live_segments.insert(addr).second;
    if (action == "segment_free") live_segments.erase(addr);
  }
  EXPECT_EQ(actions["segment_alloc"], stats["num_device_alloc"].get<long long>());
  EXPECT_EQ(actions["segment_free"], stats["num_device_free"].get<long long>());
  EXPECT_EQ(actions["alloc"], stats["allocation.all.allocated"].get<long long>());
  EXPECT_FALSE(segment_reused_while_live);
  const long long segments_left = stats["segment.all.current"].get<long long>();
  ASSERT_GT(segments_left, 0) << "the sequence ends holding memory";
  EXPECT_EQ(static_cast<long long>(live_segments.size()), segments_left);
  EXPECT_EQ(static_cast<long long>(snapshot["segments"].size()), segments_left);
  long long reserved = 0;
  for (const auto& segment : snapshot["segments"]) {
    reserved += segment["total_size"].get<long long>();
    EXPECT_TRUE(live_segments.contains(segment["address"].get<std::uint64_t>())) << segment.dump().substr(0, 200);
  }
  EXPECT_EQ(reserved, stats["reserved_bytes.all.current"].get<long long>());
  const auto bad = run_cli("CUDASCOPE_BACKEND=sim", "replay " + data("replay_default_s1.jsonl.gz") + " --snapshot " +
                                                        temp("replay_history.txt"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.output, HasSubstr("replay_history.txt")) << "the error names the file";
}

// A snapshot that cannot be written (here: past the file-size limit, SIGXFSZ ignored as a
// shell's `trap` leaves it) fails the command, after the stats are written whole, and leaves
// no half snapshot behind, nor the earlier one it was to replace.
TEST(CliE2eTest, ReplayKeepsItsStatsWhenTheSnapshotCannotBeWritten) {
  const std::string stats_path = temp("replay_limited_stats.json"), snapshot_path = temp("replay_limited.json");
  std::filesystem::remove(stats_path);
  { std::ofstream(snapshot_path) << "earlier"; }
  const auto r = run_shell("trap '' XFSZ; ulimit -f 64; CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_MEMORY=128GiB " +
                           std::string(CUDASCOPE_CLI_PATH) + " replay " + data("replay_default_s1.jsonl.gz") +
                           " --stats-json " + stats_path + " --snapshot " + snapshot_path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--snapshot: cannot write '" + snapshot_path + "'"));
  const auto stats = nlohmann::json::parse(read(stats_path));
  EXPECT_GT(stats["allocation.all.allocated"].get<long long>(), 0);
  EXPECT_EQ(read(snapshot_path), "earlier");
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(snapshot_path).parent_path()))
    EXPECT_EQ(entry.path().filename().string().find("replay_limited.json.partial"), std::string::npos) << entry.path();
}

// Stats that cannot be written (past a file-size limit of 1 KiB) fail the command and leave the
// file they were to replace as it was, with no half file beside it.
TEST(CliE2eTest, ReplayKeepsTheEarlierStatsWhenNewOnesCannotBeWritten) {
  const std::string stats_path = temp("replay_stats_limited.json");
  { std::ofstream(stats_path) << "{\"earlier\": 1}\n"; }
  const auto r = run_shell("trap '' XFSZ; ulimit -f 2; CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_MEMORY=128GiB " +
                           std::string(CUDASCOPE_CLI_PATH) + " replay " + data("replay_default_s1.jsonl.gz") +
                           " --stats-json " + stats_path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("--stats-json: cannot write '" + stats_path + "'"));
  EXPECT_EQ(read(stats_path), "{\"earlier\": 1}\n");
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(stats_path).parent_path()))
    EXPECT_EQ(entry.path().filename().string().find("replay_stats_limited.json.partial"), std::string::npos)
        << entry.path();
}

// One file for both outputs is refused before the replay runs: only the last written would stay.
TEST(CliE2eTest, ReplayRefusesOneFileForItsStatsAndItsSnapshot) {
  const std::string path = temp("replay_both.json");
  std::filesystem::remove(path);
  const auto r = run_cli("CUDASCOPE_BACKEND=sim", "replay " + data("replay_default_s1.jsonl.gz") + " --stats-json " +
                                                      path + " --snapshot " + path);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_THAT(r.output, HasSubstr("is also --stats-json"));
  EXPECT_FALSE(std::filesystem::exists(path)) << "refused before anything was written";
}

TEST(CliE2eTest, StatsPrintsTheTablesKeptBesideTheTraces) {
  auto r = run_cli("", "stats " + data("trace_golden.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, read(data("trace_golden.stats.txt")));
  r = run_cli("", "stats --csv " + data("kineto_train_h100_s3.json.gz"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, read(data("kineto_train_h100_s3.stats.csv")));
  // The CSV's kernel rows agree with the counts Python's json made from the same trace.
  const auto expect = nlohmann::json::parse(read(data("kineto_train_h100_s3.expect.json")));
  ASSERT_TRUE(expect.contains("kernels_by_name")) << expect.dump().substr(0, 300);
  for (const auto& [name, count] : expect["kernels_by_name"].items()) {
    if (name.find_first_of(",\"") != std::string::npos) continue;  // quoted in CSV; the plain names suffice
    EXPECT_THAT(r.output, HasSubstr("\nkernel," + name + "," + std::to_string(count.get<long long>()) + ","))
        << "kernel " << name;
  }
}

TEST(CliE2eTest, StatsCheckPassesAValidTraceAndFailsABrokenOne) {
  auto r = run_cli("", "stats --check " + data("trace_golden.json"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("18 events follow the trace format's rules"));
  const std::string broken = temp("unmatched_end.json");
  std::ofstream(broken) << R"({"traceEvents":[{"ph":"E","ts":1,"pid":1,"tid":1,"name":"x"}]})";
  r = run_cli("", "stats --check " + broken);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_THAT(r.output, HasSubstr("\"E\" with no open \"B\" on pid 1 tid 1"));
  // Without --check the same file is summarised, not judged.
  EXPECT_EQ(run_cli("", "stats " + broken).exit_code, 0);
}

TEST(CliE2eTest, SnapshotStatsTextHoldsThePythonMadeFigures) {
  const auto r = run_cli("", "snapshot-stats " + data("snap_small.json"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto expect = nlohmann::json::parse(read(data("snap_small.stats.json")));
  auto row = [&](const std::string& label, const std::string& value) {
    EXPECT_THAT(r.output, ::testing::ContainsRegex("\n  " + label + " +" + value + "\n")) << label;
  };
  row("segments", std::to_string(expect["segments"].get<long long>()));
  row("blocks", std::to_string(expect["blocks"].get<long long>()));
  row("trace entries", std::to_string(expect["trace_entries"].get<long long>()));
  row("reserved", "[0-9.]+ [KMG]?i?B \\(" + std::to_string(expect["reserved_bytes"].get<long long>()) + "\\)");
  row("allocated", "[0-9.]+ [KMG]?i?B \\(" + std::to_string(expect["allocated_bytes"].get<long long>()) + "\\)");
  row("oom entries", std::to_string(expect["oom_entries"].get<long long>()));
  std::ostringstream ratio;
  ratio.precision(3);
  ratio << expect["external_fragmentation_ratio"].get<double>() * 100;
  row("external fragmentation", std::regex_replace(ratio.str(), std::regex("\\."), "\\.") + "%");
  // One "action=count" per recorded action, on the actions line (in the allocator's order).
  const std::size_t line_start = r.output.find("\n  actions ");
  ASSERT_NE(line_start, std::string::npos) << r.output;
  const std::string actions = r.output.substr(line_start + 1, r.output.find('\n', line_start + 1) - line_start);
  for (const auto& [action, count] : expect["actions"].items()) {
    EXPECT_THAT(actions, ::testing::ContainsRegex(" " + action + "=" + std::to_string(count.get<long long>()) + "[ \n]"));
  }
  EXPECT_EQ(std::count(actions.begin(), actions.end(), '='), static_cast<long>(expect["actions"].size()));
}

// `cudascope ARGS...` left running, as a user starts it, with this environment plus `env`
// ("NAME=value" entries, taking precedence); stopped with SIGTERM as Ctrl-C would.
class Background {
 public:
  Background(const std::vector<std::string>& args, const std::string& log_name,
             std::vector<std::string> env = {"CUDASCOPE_BACKEND=sim"})
      : log_(temp(log_name)) {
    std::vector<std::string> argv_storage{CUDASCOPE_CLI_PATH};
    argv_storage.insert(argv_storage.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_storage) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);  // getenv takes the first
    std::vector<char*> envp;
    for (auto& entry : env) envp.push_back(entry.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~Background() { stop(); }
  pid_t pid() const { return pid_; }
  bool running() const {
    int status = 0;
    return pid_ > 0 && waitpid(pid_, &status, WNOHANG) == 0;
  }
  // The port from the banner ("... (port N) ..."), or 0 after 10 s without one.
  int port() {
    const std::regex banner("\\(port ([0-9]+)\\)");
    for (int i = 0; i < 200 && pid_ > 0; ++i) {
      std::smatch m;
      const std::string text = output();
      if (std::regex_search(text, m, banner)) return std::stoi(m[1]);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  }
  int stop() {
    if (pid_ <= 0) return status_;
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return status_;
  }
  std::string output() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int status_ = -1;
};

TEST(CliE2eTest, ServeAnswersAScrapeOverHttp) {
  Background serve({"serve", "--bind", "127.0.0.1:0", "--device", "1", "--job", "e2e"}, "serve.log");
  const int port = serve.port();
  ASSERT_GT(port, 0) << serve.output();
  const auto body = http_get(port, "/metrics");
  ASSERT_TRUE(body.has_value());
  const auto samples = parse_exposition(*body);
  ASSERT_FALSE(samples.empty()) << *body;
  const auto watts = find_sample(samples, "cudascope_gpu_power_watts", {{"device", "1"}, {"job", "e2e"}});
  ASSERT_TRUE(watts.has_value()) << *body;
  EXPECT_GT(*watts, 1.0);
  EXPECT_FALSE(find_sample(samples, "cudascope_device_info", {{"device", "0"}}).has_value()) << "--device 1 only";
  const auto missing = http_exchange(port, "GET /nothing HTTP/1.0\r\n\r\n");
  ASSERT_TRUE(missing.has_value());
  EXPECT_EQ(missing->rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(serve.stop(), 0) << serve.output();
  EXPECT_THAT(serve.output(), HasSubstr("stopped serving metrics"));
}

// `view` names a file it cannot open before any viewer starts (built or not).
TEST(CliE2eTest, ViewRefusesAMissingFile) {
  const auto missing = run_cli("", "view " + temp("no_such_snapshot.pickle"));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.output, HasSubstr("no_such_snapshot.pickle: No such file or directory"));
}

// `view --select` without --screenshot, and --match 0, are refused before any viewer starts.
TEST(CliE2eTest, ViewRefusesScreenshotOptionsMisused) {
  const std::string trace = data("trace_golden.json"), png = temp("view_screenshot.png");
  const auto orphan = run_cli("", "view --select add_kernel " + trace);
  EXPECT_NE(orphan.exit_code, 0);
  EXPECT_THAT(orphan.output, HasSubstr("--screenshot"));
  const auto zeroth = run_cli("", "view --screenshot " + png + " --select add_kernel --match 0 " + trace);
  EXPECT_NE(zeroth.exit_code, 0);
  EXPECT_THAT(zeroth.output, HasSubstr("--match"));
}

// The viewer's own tests: only where it is built (CUDASCOPE_WITH_GUI and Qt 6).
#ifdef CUDASCOPE_VIEWER_BUILT
// `view` execs the viewer on the files; headless (Qt's offscreen platform) it opens them and
// stays up, as a window would, until stopped.
TEST(CliE2eTest, ViewOpensTheFilesInTheViewerHeadless) {
  const std::string snapshot = data("snap_small.json"), trace = data("trace_golden.json");
  Background view({"view", snapshot, trace}, "view.log",
                  {"CUDASCOPE_BACKEND=sim", "QT_QPA_PLATFORM=offscreen", "CUDASCOPE_VIEWER_NO_DIALOGS=1"});
  // The process becomes cudascope-viewer, with the files as its arguments.
  std::string exe, cmdline;
  for (int i = 0; i < 200 && exe.find("cudascope-viewer") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::error_code ignored;
    exe = std::filesystem::read_symlink("/proc/" + std::to_string(view.pid()) + "/exe", ignored).string();
  }
  ASSERT_THAT(exe, HasSubstr("cudascope-viewer")) << view.output();
  std::ifstream in("/proc/" + std::to_string(view.pid()) + "/cmdline");
  cmdline.assign(std::istreambuf_iterator<char>(in), {});
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  EXPECT_THAT(cmdline, HasSubstr(snapshot));
  EXPECT_THAT(cmdline, HasSubstr(trace));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_TRUE(view.running()) << "the viewer exited while opening the files: " << view.output();
  EXPECT_EQ(view.stop(), 128 + SIGTERM) << view.output();
}

// `view --screenshot PNG --select TEXT --match N` passes them to the viewer, which saves the
// window with the N-th matching event selected and quits.
TEST(CliE2eTest, ViewSavesAScreenshotWithTheSelectedEvent) {
  const std::string trace = data("trace_golden.json"), png = temp("view_screenshot.png");
  std::filesystem::remove(png);
  const auto saved = run_cli("CUDASCOPE_BACKEND=sim QT_QPA_PLATFORM=offscreen CUDASCOPE_VIEWER_NO_DIALOGS=1",
                             "view --screenshot " + png + " --select add_kernel --match 1 " + trace);
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  EXPECT_THAT(saved.output, HasSubstr("screenshot: "));
  const std::string image = read(png);
  ASSERT_GT(image.size(), 8U);
  EXPECT_EQ(image.substr(1, 3), "PNG");
  const auto none = run_cli("CUDASCOPE_BACKEND=sim QT_QPA_PLATFORM=offscreen CUDASCOPE_VIEWER_NO_DIALOGS=1",
                            "view --screenshot " + png + " --select no_such_event_name " + trace);
  EXPECT_EQ(none.exit_code, 1) << none.output;
}

// With no display and no Qt platform asked for, a window cannot open: the viewer says why and
// exits 1 (Qt alone aborts); a screenshot needs no display and is drawn offscreen.
TEST(CliE2eTest, ViewWithoutADisplaySaysSoAndStillTakesScreenshots) {
  const std::string snapshot = data("snap_small.json"), png = temp("view_no_display.png");
  const std::string no_display = "env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM CUDASCOPE_VIEWER_NO_DIALOGS=1";
  const auto window = run_cli(no_display, "view " + snapshot);
  EXPECT_EQ(window.exit_code, 1) << window.output;
  EXPECT_THAT(window.output, HasSubstr("no display to open a window on"));
  std::filesystem::remove(png);
  const auto saved = run_cli(no_display, "view --screenshot " + png + " " + snapshot);
  ASSERT_EQ(saved.exit_code, 0) << saved.output;
  EXPECT_EQ(read(png).substr(1, 3), "PNG");
}
#endif  // CUDASCOPE_VIEWER_BUILT

// The (ph, cat) pairs of a trace's events.
std::set<std::pair<std::string, std::string>> event_kinds(const std::string& path) {
  const auto trace = nlohmann::json::parse(read(path));
  const auto& events = trace.is_array() ? trace : trace["traceEvents"];
  std::set<std::pair<std::string, std::string>> out;
  for (const auto& e : events) out.emplace(e.value("ph", ""), e.value("cat", ""));
  return out;
}

TEST(CliE2eTest, RunActivitiesRecordsOnlyTheChosenKinds) {
  const std::string cli = CUDASCOPE_CLI_PATH;
  const std::string only = temp("kernels_only.json"), everything = temp("default.json");
  auto r = run_cli("CUDASCOPE_BACKEND=sim", "run --activities kernel -o " + only + " -- " + cli + " demo --iterations 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_cli("CUDASCOPE_BACKEND=sim", "run -o " + everything + " -- " + cli + " demo --iterations 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto kernels = event_kinds(only), all = event_kinds(everything);
  EXPECT_TRUE(kernels.count({"X", "kernel"}));
  for (const auto& [ph, cat] : kernels) {
    EXPECT_TRUE(ph == "M" || (ph == "X" && cat == "kernel")) << ph << " " << cat << " recorded with --activities kernel";
  }
  // The default records more: runtime calls, NVTX ranges, the launch-to-kernel flows.
  EXPECT_TRUE(all.count({"X", "kernel"}));
  EXPECT_TRUE(all.count({"X", "cuda_runtime"}));
  EXPECT_TRUE(all.count({"B", "nvtx"}));
  EXPECT_TRUE(all.count({"s", "ac2g"}));
  r = run_cli("CUDASCOPE_BACKEND=sim", "run --activities kernels -o " + only + " -- true");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.output, HasSubstr("kernels"));
}

// The process run starts owns a fixed -o name; a process it starts in turn writes
// NAME.<pid>.json beside it. When that is the only trace (the program run under a shell), it
// takes the name asked for; two such processes keep their own names.
TEST(CliE2eTest, RunNamesTheOnlyTraceAsAskedWhenTheProgramRunsUnderAShell) {
  const std::string cli = CUDASCOPE_CLI_PATH;
  const std::string dir = temp("run_under_shell");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto listing = [&dir] {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) names.insert(entry.path().filename().string());
    return names;
  };
  auto r = run_cli("CUDASCOPE_BACKEND=sim", "run -o " + dir + "/one.json -- sh -c '" + cli + " demo --iterations 2 >/dev/null; true'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(listing(), std::set<std::string>{"one.json"}) << r.output;
  EXPECT_THAT(r.output, HasSubstr("trace " + dir + "/one.json ("));
  EXPECT_TRUE(event_kinds(dir + "/one.json").count({"X", "kernel"}));
  r = run_cli("CUDASCOPE_BACKEND=sim", "run -o " + dir + "/two.json -- sh -c '" + cli + " demo --iterations 2 >/dev/null; " +
                                           cli + " demo --iterations 2 >/dev/null'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::size_t suffixed = 0;
  for (const std::string& name : listing()) suffixed += name.starts_with("two.") && name != "two.json";
  EXPECT_EQ(suffixed, 2U) << r.output;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cudascope::testing
