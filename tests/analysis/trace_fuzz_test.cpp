// A fuzz corpus for the trace loader: thousands of mutations of the fixtures (bytes flipped,
// inserted, deleted, chunks repeated, cut), each loaded plain and gzipped. Every one must
// either load (then stats and checks run on it) or fail with a message naming the input
// and a byte offset. Runs under ASan and UBSan in CI (.ci/sanitizers.sh).
//
// Also: input that never ends (/dev/zero) and a gzip bomb stop at the budget.
#include "test_volume.h"
#include "trace_test_support.h"

#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <filesystem>
#include <random>

using namespace cudascope;
using namespace cudascope::trace_testing;

namespace {

std::string mutate(const std::string& seed, std::mt19937& rng) {
  std::string text = seed;
  const int edits = 1 + static_cast<int>(rng() % 4);
  static const char kInteresting[] = "{}[],:\"\\0123456789-.eE \n\x00\xff\x80tfn";
  for (int k = 0; k < edits && !text.empty(); ++k) {
    const std::size_t at = rng() % text.size();
    switch (rng() % 6) {
      case 0: text[at] = static_cast<char>(rng() % 256); break;
      case 1: text[at] = kInteresting[rng() % (sizeof kInteresting - 1)]; break;
      case 2: text.insert(at, 1, kInteresting[rng() % (sizeof kInteresting - 1)]); break;
      case 3: text.erase(at, 1 + rng() % 16); break;
      case 4: {  // repeat a chunk: duplicate keys, events, brackets
        const std::size_t length = std::min<std::size_t>(1 + rng() % 200, text.size() - at);
        text.insert(at, text.substr(at, length));
        break;
      }
      default: text.resize(at); break;
    }
  }
  return text;
}

void expect_loads_or_fails_clearly(const std::string& text, const std::string& origin) {
  analysis::TraceLoadOptions options;
  options.budget_bytes = 8 << 20;
  const auto loaded = analysis::load_trace_text(text, origin, options);
  if (loaded.ok()) {
    const auto stats = analysis::compute_stats(*loaded.model);
    EXPECT_EQ(stats.events, static_cast<std::int64_t>(loaded.model->event_count()));
    analysis::validate_trace(*loaded.model);
    for (std::uint32_t t = 0; t < loaded.model->tracks().size(); ++t) loaded.model->track_label(t);
    for (const auto& flow : loaded.model->flows()) {
      ASSERT_LT(flow.from_event, loaded.model->event_count());
      ASSERT_LT(flow.to_event, loaded.model->event_count());
    }
    return;
  }
  EXPECT_EQ(loaded.error.rfind(origin + ": ", 0), 0u) << loaded.error;
  const bool says_where = loaded.error.find("byte ") != std::string::npos || loaded.error.find("gzip") != std::string::npos ||
                          loaded.error.find("budget") != std::string::npos;
  EXPECT_TRUE(says_where) << loaded.error;
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

}  // namespace

TEST(TraceFuzzTest, MutatedFixturesLoadOrFailWithAnOffset) {
  std::vector<std::string> seeds = {read_text(data_path("trace_golden.json")), read_text(data_path("chrome_plain.json"))};
  const std::string kineto = read_text(data_path("kineto_train_h100_s3.json.gz"));
  // The Kineto file's header and first events: every construct it has, small enough to run often.
  seeds.push_back(kineto.substr(0, 24000));
  seeds.push_back(kineto.substr(kineto.size() - 12000));
  std::mt19937 rng(20261123);
  const int rounds = cudascope::testing::volume_from_env("CUDASCOPE_FUZZ_ROUNDS", 1500);
  for (int round = 0; round < rounds; ++round) {
    const std::string& seed = seeds[static_cast<std::size_t>(round) % seeds.size()];
    const std::string text = mutate(seed, rng);
    expect_loads_or_fails_clearly(text, "mutant " + std::to_string(round));
    if (round % 5 == 0) expect_loads_or_fails_clearly(gzip(text, 1), "mutant " + std::to_string(round) + ".gz");
    if (::testing::Test::HasFailure()) {
      write_text(temp_path("failing_mutant.json"), text);
      FAIL() << "mutant " << round << " kept at " << temp_path("failing_mutant.json");
    }
  }
}

TEST(TraceFuzzTest, DevZeroFailsAtOnceWithTheOffset) {
  const auto loaded = analysis::load_trace("/dev/zero");
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error.find("/dev/zero: byte 0"), std::string::npos) << loaded.error;
}

TEST(TraceFuzzTest, EndlessValidLookingInputStopsAtTheBudgetInBoundedMemory) {
  // A gzip bomb: 192 MiB of events when inflated, about 1 MiB on disk. And one of spaces.
  const std::string path = temp_path("bomb.json.gz");
  const std::string spaces_path = temp_path("spaces.json.gz");
  {
    gzFile out = gzopen(path.c_str(), "wb6");
    gzputs(out, "{\"traceEvents\":[");
    const std::string event = "{\"ph\":\"X\",\"name\":\"k\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":1.5,\"dur\":2,\"args\":{\"n\":1}},";
    std::string block;
    while (block.size() < (1 << 20)) block += event;
    for (int i = 0; i < 192; ++i) gzwrite(out, block.data(), static_cast<unsigned>(block.size()));
    gzclose(out);
    gzFile spaces = gzopen(spaces_path.c_str(), "wb6");
    gzputs(spaces, "{\"traceEvents\":[");
    const std::string blank(1 << 20, ' ');
    for (int i = 0; i < 192; ++i) gzwrite(spaces, blank.data(), static_cast<unsigned>(blank.size()));
    gzclose(spaces);
  }
  ASSERT_LT(std::filesystem::file_size(path), 8u << 20);
  const long before = peak_rss_kib();
  analysis::TraceLoadOptions options;
  options.budget_bytes = 64 << 20;
  for (const std::string& p : {path, spaces_path}) {
    const auto loaded = analysis::load_trace(p, options);
    ASSERT_FALSE(loaded.ok()) << p;
    EXPECT_NE(loaded.error.find("64 MiB budget"), std::string::npos) << loaded.error;
    EXPECT_NE(loaded.error.find("CUDASCOPE_INPUT_BUDGET"), std::string::npos) << loaded.error;
  }
  const long grown_mib = (peak_rss_kib() - before) / 1024;
  EXPECT_LT(grown_mib, 256) << "memory follows the 64 MiB budget, not the 192 MiB input";
  std::filesystem::remove(path);
  std::filesystem::remove(spaces_path);
}
