// The `cudascope` command as a user runs it.
#include "test_support.h"

#include "run_cli.h"

#include <fstream>
#include <iterator>
#include <sstream>

namespace {

using cudascope::testing::run_cli;
using Result = cudascope::testing::CliResult;
using ::testing::HasSubstr;

}  // namespace

TEST(CliTest, HelpListsTheSubcommands) {
  const Result result = run_cli("", "--help");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("devices"));
  EXPECT_THAT(result.output, HasSubstr("demo"));
}

TEST(CliTest, EverySubcommandHasHelp) {
  // The subcommands are the lines after "Subcommands:" in the top-level help.
  const std::string help = run_cli("", "--help").output;
  const std::size_t section = help.find("Subcommands:");
  ASSERT_NE(section, std::string::npos) << help;
  std::istringstream lines(help.substr(section));
  std::vector<std::string> subcommands;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    if (line.rfind("  ", 0) == 0 && words >> first) subcommands.push_back(first);
  }
  EXPECT_GE(subcommands.size(), 2u);
  for (const std::string& sub : subcommands) {
    const Result result = run_cli("", sub + " --help");
    EXPECT_EQ(result.exit_code, 0) << sub;
    EXPECT_THAT(result.output, HasSubstr("Usage")) << sub;
  }
}

TEST(CliTest, VersionPrintsTheProjectVersion) {
  const Result result = run_cli("", "--version");
  EXPECT_EQ(result.exit_code, 0);
  EXPECT_EQ(result.output, std::string("cudascope ") + cudascope::kVersion + "\n");
}

TEST(CliTest, DevicesPrintsATableOnSim) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_DEVICES=3 CUDASCOPE_SIM_MEMORY=8GiB", "devices");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("index"));
  EXPECT_THAT(result.output, HasSubstr("capability"));
  EXPECT_THAT(result.output, HasSubstr("8.0 GiB"));
  EXPECT_EQ(std::count(result.output.begin(), result.output.end(), '\n'), 4) << result.output;
}

TEST(CliTest, UnknownBackendIsAnErrorListingTheValidOnes) {
  const Result result = run_cli("CUDASCOPE_BACKEND=tpu", "devices");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("'tpu'"));
  EXPECT_THAT(result.output, HasSubstr("cuda, sim, auto"));
}

TEST(CliTest, BadSimMemoryIsAnErrorNamingTheVariable) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim CUDASCOPE_SIM_MEMORY=huge", "devices");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("CUDASCOPE_SIM_MEMORY='huge'"));
}

TEST(CliTest, DemoSaysWhichBackendItRanOn) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "demo --iterations 4 --kernel-ms 1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("on the sim backend"));
  EXPECT_THAT(result.output, HasSubstr("ran 4 steps"));
}

TEST(CliTest, DemoDefaultsToAuto) {
  // Without a GPU, auto falls back to sim; with one it runs on cuda.
  const Result result = run_cli("env -u CUDASCOPE_BACKEND", "demo --iterations 2 --kernel-ms 1");
  ASSERT_EQ(result.exit_code, 0) << result.output;
  // A GPU: the cuda backend lists devices (a build without it fails; one without a GPU says so).
  const Result cuda_devices = run_cli("CUDASCOPE_BACKEND=cuda", "devices");
  const bool has_gpu = cuda_devices.exit_code == 0 && cuda_devices.output.find("no devices") == std::string::npos;
  EXPECT_THAT(result.output, HasSubstr(has_gpu ? "on the cuda backend" : "on the sim backend"));
}

TEST(CliTest, BadOptionValueIsRejected) {
  const Result result = run_cli("CUDASCOPE_BACKEND=sim", "demo --iterations 0");
  EXPECT_NE(result.exit_code, 0);
  EXPECT_THAT(result.output, HasSubstr("iterations"));
}

// The runtime's snapshot, read back by the viewer's loader: the journey from a run to the GUI.
TEST(CliTest, DemoSnapshotOpensInTheSnapshotTools) {
  for (const char* extension : {".pickle", ".json.gz", ".json"}) {
    const std::string path = ::testing::TempDir() + "demo_snapshot" + extension;
    const Result demo = run_cli("CUDASCOPE_BACKEND=sim", "demo --iterations 4 --kernel-ms 1 --snapshot " + path);
    ASSERT_EQ(demo.exit_code, 0) << demo.output;
    EXPECT_THAT(demo.output, HasSubstr("allocator snapshot written to " + path));
    const Result stats = run_cli("", "snapshot-stats --json " + path);
    ASSERT_EQ(stats.exit_code, 0) << stats.output;
    // The demo allocates three blocks per step and frees them all before it ends.
    EXPECT_THAT(stats.output, ::testing::ContainsRegex("\"alloc\": *12")) << stats.output;
    EXPECT_THAT(stats.output, ::testing::ContainsRegex("\"free_requested\": *12")) << stats.output;
    EXPECT_THAT(stats.output, ::testing::ContainsRegex("\"allocated_bytes\": *0[,}\\n ]")) << stats.output;
    if (std::string(extension) != ".json") continue;
    // Its frames name the demo's own functions, which are not exported (an anonymous
    // namespace in an executable): read from the symbol table, not dladdr's "??". (A frame
    // in the C library's start-up, a local symbol its stripped table lacks, stays "??".)
    std::ifstream in(path, std::ios::binary);
    const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(json.find("::run_demo("), std::string::npos);
    EXPECT_EQ(json.find(R"({"name":"??","filename":"cudascope")"), std::string::npos)
        << "a frame of the demo named \"??\"";
  }
}
