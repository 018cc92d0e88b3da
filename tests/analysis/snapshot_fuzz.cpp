// Fuzzing the loaders. LLVMFuzzerTestOneInput is a libFuzzer entry point (build this file
// with -fsanitize=fuzzer to fuzz for real); the tests below run the same function over a
// deterministic corpus: every snap_* file, truncations of the small fixtures at many
// lengths, and thousands of garbled variants (flipped, inserted, deleted bytes).
#include "snapshot_test_support.h"
#include "test_volume.h"

#include <cudascope/analysis/allocator_replay.h>
#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/stacked_timeline.h>

#include <cudascope/analysis/file_kind.h>
#include <cudascope/util/byte_source.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <random>
#include <sys/resource.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace cudascope::analysis {
namespace {

// Loads; on success exercises everything derived from the snapshot too.
bool fuzz_one(std::string_view bytes) {
  auto r = load_snapshot_from_bytes(bytes, "fuzz");
  if (!r) {
    const LoadError& e = r.error();
    if (e.expected.empty() || e.file != "fuzz") std::abort();  // every failure explains itself
    return false;
  }
  const Snapshot& snap = r.value();
  (void)compute_figures(snap);
  for (int device : snap.device_ids()) {
    AllocatorReplay replay(snap, device);
    (void)replay.state_after(replay.first_entry() + (replay.end_entry() - replay.first_entry()) / 2);
    const auto timeline = StackedTimeline::build(snap, device, StackedTimeline::Kind::allocations);
    std::vector<uint32_t> pixels(64 * 16);
    timeline.render(TimelineView{timeline.begin_us(), timeline.end_us(), timeline.peak_bytes() + 1, 64, 16},
                    pixels.data(), 64);
  }
  return true;
}

}  // namespace
}  // namespace cudascope::analysis

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cudascope::analysis::fuzz_one(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

#ifndef CUDASCOPE_LIBFUZZER
namespace cudascope::analysis {
namespace {

using testing::data_path;
using testing::read_file;

TEST(SnapshotFuzzTest, EveryDataFileLoadsOrFailsCleanly) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(CUDASCOPE_TEST_DATA)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("snap_", 0) != 0) continue;
    const std::string bytes = read_file(entry.path().string());
    const bool ok = fuzz_one(bytes);
    if (name.rfind("snap_bad_", 0) == 0) {
      EXPECT_FALSE(ok) << name;
    }
    ++files;
  }
  EXPECT_GE(files, 10);
}

TEST(SnapshotFuzzTest, EveryTruncationFailsWithAnOffsetInsideTheData) {
  for (const char* name : {"snap_small_p5.pickle", "snap_small.json"}) {
    const std::string bytes = read_file(data_path(name));
    // The whole file loads, so each failure below is the cut's doing.
    ASSERT_TRUE(load_snapshot_from_bytes(bytes, "whole")) << name;
    for (size_t len = 0; len < bytes.size(); len += (len < 4096 ? 1 : 97)) {
      auto r = load_snapshot_from_bytes(std::string_view(bytes).substr(0, len), "cut");
      ASSERT_FALSE(r) << name << " cut at " << len << " loaded";
      EXPECT_LE(r.error().offset, len) << r.error().message();
    }
  }
}

TEST(SnapshotFuzzTest, GarbledVariantsNeverCrash) {
  std::mt19937_64 rng(20261122);
  int loaded = 0, failed = 0;
  for (const char* name : {"snap_small_p5.pickle", "snap_small.json", "snap_transformer_p4.pickle.gz"}) {
    const std::string seed = read_file(data_path(name));
    ASSERT_TRUE(load_snapshot_from_bytes(seed, "seed")) << name;
    // Garbling gzip exercises the inflate path; fewer rounds, as each one inflates the file.
    const int plain_rounds = cudascope::testing::volume_from_env("CUDASCOPE_FUZZ_ROUNDS", 1500);
    const int rounds = uint8_t(seed[0]) == 0x1f ? plain_rounds / 5 : plain_rounds;
    for (int round = 0; round < rounds; ++round) {
      std::string bytes = seed;
      const int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits; ++e) {
        const size_t pos = rng() % bytes.size();
        switch (rng() % 4) {
          case 0: bytes[pos] = static_cast<char>(rng()); break;
          case 1: bytes[pos] = static_cast<char>(bytes[pos] ^ (1 << (rng() % 8))); break;
          case 2: bytes.insert(pos, 1, static_cast<char>(rng())); break;
          default: bytes.erase(pos, 1 + rng() % 16); break;
        }
        if (bytes.empty()) bytes = "x";
      }
      (fuzz_one(bytes) ? loaded : failed)++;
    }
  }
  // Both outcomes occur: some garbling is caught by the loaders, and some variants load, so
  // the analyses after loading (figures, replay, timelines) run on damaged data too.
  EXPECT_GT(failed, 0);
  EXPECT_GT(loaded, 0) << "no garbled variant loaded: nothing past the loaders was fuzzed";
}

// Every data file read from a pipe (opened once, its kind told from its head, then read on
// from the same stream, as `diff` and `stats` do) gives what the file gives: the same
// snapshot or the same error.
TEST(SnapshotFuzzTest, EveryDataFileReadsTheSameFromAPipe) {
  const std::string fifo = ::testing::TempDir() + "snapshot_fuzz_" + std::to_string(::getpid()) + ".fifo";
  // A reader that stops at an error closes the pipe under the writer: EPIPE, not SIGPIPE.
  const auto old_handler = std::signal(SIGPIPE, SIG_IGN);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(CUDASCOPE_TEST_DATA)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("snap_", 0) != 0) continue;
    SCOPED_TRACE(name);
    const std::string bytes = read_file(entry.path().string());
    std::remove(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    std::thread writer([&] {
      if (std::FILE* out = std::fopen(fifo.c_str(), "wb")) {
        std::fwrite(bytes.data(), 1, bytes.size(), out);
        std::fclose(out);
      }
    });
    std::string error;
    auto input = util::PeekedInput::open(fifo, UINT64_MAX, error);
    ASSERT_NE(input, nullptr) << error;
    const auto kind = detect_file_kind(*input);
    auto from_pipe = load_snapshot(*input);
    input.reset();  // closes the pipe: a writer still writing gets EPIPE and stops
    writer.join();
    auto from_bytes = load_snapshot_from_bytes(bytes, fifo);
    ASSERT_EQ(bool(from_pipe), bool(from_bytes));
    if (from_bytes) {
      EXPECT_TRUE(kind && kind.value() == FileKind::snapshot);
      EXPECT_EQ(from_pipe.value().segments.size(), from_bytes.value().segments.size());
      EXPECT_EQ(from_pipe.value().trace.size(), from_bytes.value().trace.size());
    } else {
      EXPECT_EQ(from_pipe.error().message(), from_bytes.error().message());
    }
    ++files;
  }
  std::remove(fifo.c_str());
  std::signal(SIGPIPE, old_handler);
  EXPECT_GE(files, 10);
}

// Pickle programs that build far more than they weigh: a byte per None pushed, per memo
// entry, per MARK; two per empty list appended. Each stays under the input budget, so only
// the pickle machine's own limit (half the budget) stops it, and it must do so with an error
// naming that limit, in memory bounded by it, never by growing until std::bad_alloc.
TEST(SnapshotFuzzTest, PickleBombsStopAtTheMachineLimitInBoundedMemory) {
  constexpr uint64_t kBudget = uint64_t{256} << 20;
  constexpr size_t kOps = size_t{80} << 20;  // 80M one-byte ops: 1.25 GiB of 16-byte values
  struct Bomb {
    const char* name;
    std::string prefix, op;
  };
  const Bomb bombs[] = {
      {"None pushes", std::string("\x80\x04", 2), "N"},
      {"empty lists appended", std::string("\x80\x04]", 3), "]a"},
      {"memo entries", std::string("\x80\x04N", 3), "\x94"},
      {"marks", std::string("\x80\x04", 2), "("},
      {"empty dicts on the stack", std::string("\x80\x04", 2), "}"},
  };
  LoadOptions options;
  options.max_input_bytes = kBudget;
  for (const Bomb& bomb : bombs) {
    SCOPED_TRACE(bomb.name);
    std::string ops = bomb.op;
    while (ops.size() < kOps) ops += ops;  // doubling: quick to build
    ops.resize(kOps - kOps % bomb.op.size());
    const std::string bytes = bomb.prefix + ops + '.';
    auto r = load_snapshot_from_bytes(bytes, "bomb.pickle", options);
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().expected.find("the pickle machine's limit"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().expected.find("CUDASCOPE_INPUT_BUDGET"), std::string::npos) << r.error().message();
    EXPECT_LT(r.error().offset, bytes.size() / 2) << "stopped at the limit, not at the end";
  }
  rusage usage{};
  ASSERT_EQ(getrusage(RUSAGE_SELF, &usage), 0);
  // The largest bomb would hold 1.25 GiB (2 GiB of vector capacity) unbounded; bounded, the
  // machine holds at most half the budget (and its vectors' doubling) besides the input.
  EXPECT_LT(static_cast<uint64_t>(usage.ru_maxrss) << 10, uint64_t{900} << 20) << "peak resident memory";
}

}  // namespace
}  // namespace cudascope::analysis
#endif
