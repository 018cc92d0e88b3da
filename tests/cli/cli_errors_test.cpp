// A command line that cannot work fails at once, before any work starts, with a non-zero
// exit and a message naming the flag, value, path or variable at fault.
#include "test_support.h"

#include "run_cli.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using cudascope::testing::run_cli;
using Result = cudascope::testing::CliResult;
using ::testing::HasSubstr;
using ::testing::Not;

// What the demo prints once it has started on a device.
constexpr const char* kDemoStarted = "cudascope demo on the";

std::string temp_path(const std::string& name) { return ::testing::TempDir() + "cli_errors_" + name; }

// A file the wrapped program creates: if it exists afterwards, the program ran.
std::string marker_path(const std::string& name) {
  const std::string path = temp_path(name + ".ran");
  std::filesystem::remove(path);
  return path;
}

TEST(CliErrorsTest, UnknownOptionIsNamedAndTheCommandsListed) {
  const Result result = run_cli("", "--bogus");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("unknown option '--bogus'"));
  EXPECT_THAT(result.output, HasSubstr("commands: devices, demo, run"));
  EXPECT_THAT(result.output, Not(HasSubstr("A subcommand is required")));
}

TEST(CliErrorsTest, UnknownCommandIsNamedAndTheCommandsListed) {
  const Result result = run_cli("", "nosuchcmd --iterations 3");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("unknown command 'nosuchcmd'"));
  EXPECT_THAT(result.output, HasSubstr("snapshot-stats"));
  EXPECT_THAT(result.output, Not(HasSubstr("A subcommand is required")));
}

TEST(CliErrorsTest, NoCommandListsTheCommands) {
  const Result result = run_cli("", "");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("no command given"));
  EXPECT_THAT(result.output, HasSubstr("commands: devices, demo, run"));
}

TEST(CliErrorsTest, UnknownOptionOfACommandNamesTheCommandAndTheOption) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "demo --bogus 3");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("cudascope demo: error"));
  EXPECT_THAT(result.output, HasSubstr("--bogus"));
  EXPECT_THAT(result.output, HasSubstr("cudascope demo --help"));
  EXPECT_THAT(result.output, Not(HasSubstr(kDemoStarted)));
}

TEST(CliErrorsTest, DemoRejectsKernelLengthsThatAreNotFiniteOrInRange) {
  for (const char* value : {"nan", "inf", "-inf", "-1", "1e9", "2ms", ""}) {
    const Result result = run_cli("CUDASCOPE_BACKEND=sim", std::string("demo --iterations 2 --kernel-ms '") + value + "'");
    EXPECT_NE(result.exit_code, 0) << value;
    EXPECT_THAT(result.output, HasSubstr("--kernel-ms")) << value;
    EXPECT_THAT(result.output, HasSubstr("0 to 1000 ms")) << value;
    EXPECT_THAT(result.output, Not(HasSubstr(kDemoStarted))) << value;
  }
}

TEST(CliErrorsTest, DemoRejectsAbsurdSizes) {
  for (const std::string arguments : {"--iterations 1000000000", "--iterations -5", "--hold 1e6", "--hold nan"}) {
    const Result result = run_cli("CUDASCOPE_BACKEND=sim", "demo " + arguments);
    EXPECT_NE(result.exit_code, 0) << arguments;
    EXPECT_THAT(result.output, HasSubstr(arguments.substr(0, arguments.find(' ')))) << arguments;
    EXPECT_THAT(result.output, Not(HasSubstr(kDemoStarted))) << arguments;
  }
}

TEST(CliErrorsTest, RunRejectsANegativeDelayWithReadableLimits) {
  const std::string marker = marker_path("delay");
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "run --delay -1 -o " + temp_path("delay.json") + " -- touch " + marker);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("--delay: '-1' is out of range (expected 0 to 604800 s)"));
  EXPECT_THAT(result.output, Not(::testing::ContainsRegex("[0-9]{16}")));
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(CliErrorsTest, RunRejectsBadDurationsAndBufferSizes) {
  for (const std::string arguments : {"--duration nan", "--duration -0.5", "--cupti-buffer -1", "--cupti-buffer 100",
                                      "--cupti-buffer 1e12"}) {
    const std::string marker = marker_path("duration");
    const Result result =
        run_cli("CUDASCOPE_BACKEND=sim", "run " + arguments + " -o " + temp_path("duration.json") + " -- touch " + marker);
    EXPECT_NE(result.exit_code, 0) << arguments;
    EXPECT_THAT(result.output, HasSubstr(arguments.substr(0, arguments.find(' ')))) << arguments;
    EXPECT_FALSE(std::filesystem::exists(marker)) << arguments;
  }
}

TEST(CliErrorsTest, NoHelpPrintsAHugeNumber) {
  for (const char* command : {"demo", "run", "replay", "devices", "snapshot-stats", "view"}) {
    const Result result = run_cli("", std::string(command) + " --help");
    EXPECT_EQ(result.exit_code, 0) << command;
    EXPECT_THAT(result.output, Not(::testing::ContainsRegex("[0-9]{16}"))) << command << "\n" << result.output;
  }
}

TEST(CliErrorsTest, DemoSnapshotInAMissingDirectoryIsAFileErrorBeforeTheRun) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "demo --iterations 2 --snapshot /nonexistent/dir/x.pickle");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("--snapshot"));
  EXPECT_THAT(result.output, HasSubstr("directory /nonexistent/dir does not exist"));
  EXPECT_THAT(result.output, Not(HasSubstr("cudaError")));
  EXPECT_THAT(result.output, Not(HasSubstr(kDemoStarted)));
}

TEST(CliErrorsTest, DemoSnapshotWithAnUnknownFormatIsRejectedBeforeTheRun) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "demo --iterations 2 --snapshot " + temp_path("x.txt"));
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("must end in .pickle, .pkl or .json"));
  EXPECT_THAT(result.output, Not(HasSubstr(kDemoStarted)));
}

TEST(CliErrorsTest, RunToAMissingDirectoryNeverStartsTheProgram) {
  const std::string marker = marker_path("unwritable");
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "run -o /unwritable/t.json -- touch " + marker);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("--output"));
  EXPECT_THAT(result.output, HasSubstr("directory /unwritable does not exist"));
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the program ran unrecorded";
}

TEST(CliErrorsTest, RunToADirectoryThatRefusesFilesNeverStartsTheProgram) {
  // sysfs refuses new files even to root, whom permission bits do not stop.
  if (!std::filesystem::is_directory("/sys")) GTEST_SKIP() << "no /sys on this machine";
  const std::string marker = marker_path("sysfs");
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "run -o /sys/t.json -- touch " + marker);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("cannot create /sys/t.json"));
  EXPECT_FALSE(std::filesystem::exists(marker));
}

TEST(CliErrorsTest, RunWithItsDefaultOutputInAnUnwritableDirectoryNeverStartsTheProgram) {
  const std::string marker = marker_path("default");
  const Result result = run_cli("cd /sys && CUDASCOPE_BACKEND=sim", "run -- touch " + marker);
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("--output: cannot create trace.json"));
  EXPECT_FALSE(std::filesystem::exists(marker));
}

// The output check creates the name and removes it again when it does not exist: runs started
// together in one directory (a job's ranks, a sweep) see each other's probe and must take it
// for what it is, not refuse to start.
TEST(CliErrorsTest, RunsStartedTogetherWithOneOutputNameAllStart) {
  const std::string dir = temp_path("together");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  constexpr int kRuns = 24;
  const Result launched = cudascope::testing::run_shell(
      "cd " + dir + " && for i in $(seq " + std::to_string(kRuns) + "); do (CUDASCOPE_BACKEND=sim " +
      CUDASCOPE_CLI_PATH + " run -o t.json -- true >out_$i 2>&1; echo $? >rc_$i) & done; wait");
  ASSERT_EQ(launched.exit_code, 0) << launched.output;
  for (int i = 1; i <= kRuns; ++i) {
    std::ifstream rc(dir + "/rc_" + std::to_string(i)), out(dir + "/out_" + std::to_string(i));
    std::stringstream output;
    output << out.rdbuf();
    int code = -1;
    rc >> code;
    EXPECT_EQ(code, 0) << "run " << i << ": " << output.str();
    EXPECT_THAT(output.str(), Not(HasSubstr("cannot"))) << "run " << i;
  }
  std::filesystem::remove_all(dir);
}

TEST(CliErrorsTest, OutputUnderARegularFileIsRejected) {
  const std::string file = temp_path("plain_file");
  std::ofstream(file) << "x";
  const Result result = run_cli("", "replay /dev/null --stats-json " + file + "/stats.json");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("--stats-json"));
  EXPECT_THAT(result.output, HasSubstr(file + " is not a directory"));
}

TEST(CliErrorsTest, CheckingAnExistingOutputLeavesItUnchanged) {
  const std::string existing = temp_path("existing.json");
  std::ofstream(existing) << "keep me";
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "run -o " + existing + " -- /nonexistent/program");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("cannot run '/nonexistent/program': no such file"));
  std::ifstream in(existing);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), "keep me");
}

TEST(CliErrorsTest, RunOfAProgramNotOnThePathIsAnErrorBeforeStarting) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "run -o " + temp_path("missing.json") + " -- no-such-program-xyz");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("cannot run 'no-such-program-xyz': not found on PATH"));
  EXPECT_THAT(result.output, Not(HasSubstr("no trace written")));
}

TEST(CliErrorsTest, UnknownBackendIsNamedByEveryDeviceCommand) {
  const std::string marker = marker_path("backend");
  for (const std::string& arguments : std::vector<std::string>{"devices", "demo --iterations 2",
                                      "replay /dev/null", "run -o " + temp_path("backend.json") + " -- touch " + marker}) {
    const Result result = run_cli("CUDASCOPE_BACKEND=foo", arguments);
    EXPECT_NE(result.exit_code, 0) << arguments;
    EXPECT_THAT(result.output, HasSubstr("CUDASCOPE_BACKEND='foo' is not a backend; valid: cuda, sim, auto")) << arguments;
    EXPECT_THAT(result.output, Not(HasSubstr("cudaError"))) << arguments;
  }
  EXPECT_FALSE(std::filesystem::exists(marker)) << "cudascope run started the program";
}

// --hold keeps the process and its last steps' memory alive (for a metrics scrape) and ends
// early, cleanly, on SIGTERM.
TEST(CliErrorsTest, DemoHoldEndsCleanlyOnSigterm) {
  const std::string log = temp_path("hold.log");
  // The log emptied before the demo starts: the background job's own `>` may come after the
  // first grep, which would then find an earlier run's "holding" and signal a demo not yet
  // holding.
  const std::string script = ": > " + log + "; CUDASCOPE_BACKEND=sim " + std::string(CUDASCOPE_CLI_PATH) +
                             " demo --iterations 4 --kernel-ms 1 --hold 60 >> " + log + " 2>&1 & pid=$!; "
                             "for i in $(seq 100); do grep -q holding " + log + " && break; sleep 0.1; done; "
                             "kill -TERM $pid; wait $pid; echo status=$?; cat " + log;
  const auto start = std::chrono::steady_clock::now();
  const Result result = cudascope::testing::run_shell(script);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_THAT(result.output, HasSubstr("status=0"));
  EXPECT_THAT(result.output, ::testing::ContainsRegex("holding [1-9][0-9.]* MiB of the last two steps"));
  EXPECT_THAT(result.output, HasSubstr("memory summary"));  // it went on to finish normally
  EXPECT_LT(elapsed, std::chrono::seconds(30));
}

// --- port 0, --delay, --pid and the exit status of usage errors ----------------------------

// The URL in "serving ... at http://ADDRESS:PORT/metrics (port N)" lines, where PORT is not N.
std::vector<std::string> urls_not_naming_their_port(const std::string& output) {
  static const std::regex banner("http://[^ ]*:([0-9]+)/metrics \\(port ([0-9]+)\\)");
  std::vector<std::string> wrong;
  for (std::sregex_iterator it(output.begin(), output.end(), banner), end; it != end; ++it) {
    if ((*it)[1] != (*it)[2]) wrong.push_back(it->str());
  }
  return wrong;
}

// With port 0 each process binds a port of its own: the URL it prints names that port, and
// `cudascope trace --pid` finds it among the ports the process listens on.
TEST(CliErrorsTest, RunOnPortZeroTellsAndPublishesThePortItListensOn) {
  const std::string dir = temp_path("port0");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string cli = CUDASCOPE_CLI_PATH;
  const Result result = cudascope::testing::run_shell(
      "CUDASCOPE_BACKEND=sim " + cli + " run --metrics 127.0.0.1:0 --no-trace --window-dir " + dir + " -- " + cli +
      " demo --iterations 2 --kernel-ms 1 --hold 30 > " + dir + "/run.log 2>&1 & run=$!; "
      "for i in $(seq 100); do grep -q holding " + dir + "/run.log && break; sleep 0.1; done; "
      "timeout 20 " + cli + " trace --pid $run --duration 200ms -o " + dir + "/window.json; echo trace=$?; "
      "kill -TERM $run; wait $run; cat " + dir + "/run.log");
  EXPECT_THAT(result.output, HasSubstr("trace=0"));
  EXPECT_THAT(result.output, Not(HasSubstr("not reachable")));
  EXPECT_TRUE(std::filesystem::exists(dir + "/window.json")) << result.output;
  EXPECT_THAT(result.output, ::testing::ContainsRegex("serving live metrics at http://127\\.0\\.0\\.1:[1-9]"));
  EXPECT_THAT(urls_not_naming_their_port(result.output), ::testing::IsEmpty()) << result.output;
  std::filesystem::remove_all(dir);
}

// Two processes of one program on port 0: each serves on a port of its own.
TEST(CliErrorsTest, RunOnPortZeroServesEveryProcessOfTheProgram) {
  const std::string cli = CUDASCOPE_CLI_PATH;
  const std::string demo = cli + " demo --iterations 2 --kernel-ms 1";
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "run --metrics 127.0.0.1:0 --no-trace -- sh -c '" + demo +
                                                             " & " + demo + "; wait'");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, Not(HasSubstr("in use"))) << result.output;
  static const std::regex served("serving live metrics at http://127\\.0\\.0\\.1:([0-9]+)/metrics");
  std::set<std::string> ports;
  for (std::sregex_iterator it(result.output.begin(), result.output.end(), served), end; it != end; ++it) {
    ports.insert((*it)[1]);
  }
  EXPECT_EQ(ports.size(), 2U) << result.output;
  EXPECT_EQ(ports.count("0"), 0U) << result.output;
}

TEST(CliErrorsTest, ServeOnPortZeroPrintsTheUrlOfThePortItListensOn) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim timeout -s TERM 2", "serve --bind 127.0.0.1:0");
  EXPECT_THAT(result.output, ::testing::ContainsRegex("at http://127\\.0\\.0\\.1:[1-9][0-9]*/metrics \\(port"));
  EXPECT_THAT(urls_not_naming_their_port(result.output), ::testing::IsEmpty()) << result.output;
}

// The recording window opens --delay seconds into each process: a program that ended sooner
// recorded nothing because of the delay, not because it used no CUDA.
TEST(CliErrorsTest, RunOfAProgramShorterThanTheDelaySaysTheDelayHadNotPassed) {
  const std::string output = temp_path("delayed.json");
  std::filesystem::remove(output);
  const Result result =
      run_cli("CUDASCOPE_BACKEND=sim", "run --delay 5 -o " + output + " -- " + CUDASCOPE_CLI_PATH + " demo --iterations 2");
  EXPECT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("before the --delay of 5 s had passed, so nothing was recorded"));
  EXPECT_THAT(result.output, Not(HasSubstr("used CUDA or NVTX")));
  EXPECT_FALSE(std::filesystem::exists(output));
}

TEST(CliErrorsTest, PidThatIsNotAProcessIdIsToldInAWord) {
  for (const std::string pid : {"0", "-5", "abc", "99999999999"}) {
    const Result result = run_cli("", "trace --pid " + pid + " -o " + temp_path("pid.json"));
    EXPECT_EQ(result.exit_code, 2) << pid << ": " << result.output;
    EXPECT_THAT(result.output, HasSubstr("--pid: " + pid + " is not a process id (a positive integer)")) << pid;
    EXPECT_THAT(result.output, Not(::testing::ContainsRegex("[0-9]{16}"))) << pid;
    EXPECT_THAT(result.output, Not(HasSubstr("Could not convert"))) << pid;
  }
}

TEST(CliErrorsTest, NegativeHealthIntervalIsToldWithReadableLimits) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim timeout -s TERM 5", "serve --health-interval-ms -1");
  EXPECT_EQ(result.exit_code, 2) << result.output;
  EXPECT_THAT(result.output, HasSubstr("--health-interval-ms: '-1'"));
  EXPECT_THAT(result.output, Not(::testing::ContainsRegex("[0-9]{16}")));
  EXPECT_THAT(result.output, Not(HasSubstr("serving")));
}

// A command line refused before any work exits 2, as CLI11's own parse errors do, whichever
// check finds it: a validator or the command's own look at its flags.
TEST(CliErrorsTest, UsageErrorsFoundByTheCommandsExitTwo) {
  const std::string marker = marker_path("usage");
  const std::string window_dir = " --window-dir /nonexistent/windows";
  for (const std::string& arguments : std::vector<std::string>{
           "run --activities bogus -- touch " + marker, "run --no-trace -- touch " + marker,
           "run --window-dir /tmp -- touch " + marker,
           "run --metrics 127.0.0.1:0 --no-trace" + window_dir + " -- touch " + marker,
           "serve --bind bogus", "trace --pid 1 --duration abc"}) {
    const Result result = run_cli("CUDASCOPE_BACKEND=sim timeout -s TERM 10", arguments);
    EXPECT_EQ(result.exit_code, 2) << arguments << ": " << result.output;
    EXPECT_THAT(result.output, HasSubstr("--help' for the options")) << arguments;
  }
  EXPECT_FALSE(std::filesystem::exists(marker)) << "cudascope run started the program";
}

TEST(CliErrorsTest, RunHelpTellsTheExitStatus) {
  const Result result = run_cli("", "run --help");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("Exit status: the program's own"));
  EXPECT_THAT(result.output, HasSubstr("1 when the program exited 0 but a trace could not be written"));
  EXPECT_THAT(result.output, HasSubstr("2 when run refuses the command line"));
}

// A file that exists but is no regular file, or is a kernel interface (procfs files stat as
// regular, and root may open them for writing), is refused before the program starts.
TEST(CliErrorsTest, RunToAnOutputThatIsNoRegularFileNeverStartsTheProgram) {
  for (const std::string& output : std::vector<std::string>{"/proc/version", "/dev/null", ::testing::TempDir()}) {
    const std::string marker = marker_path("special");
    const Result result = run_cli("CUDASCOPE_BACKEND=sim", "run -o " + output + " -- touch " + marker);
    EXPECT_EQ(result.exit_code, 2) << output << ": " << result.output;
    EXPECT_THAT(result.output, HasSubstr("--output: cannot write " + output)) << output;
    EXPECT_THAT(result.output, ::testing::AnyOf(HasSubstr("not a regular file"), HasSubstr("it is a directory")));
    EXPECT_FALSE(std::filesystem::exists(marker)) << output << ": the program ran";
  }
}

}  // namespace
