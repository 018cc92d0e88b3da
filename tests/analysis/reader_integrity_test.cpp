// The readers' common rules on damaged and implausible input (issue 25): every reader
// kind (pickle snapshot, JSON snapshot, trace, rank summary) applies util::finish_input()
// to gzip damage (bad CRC-32, bad length, missing trailer, trailing garbage) the way
// `gzip -t` sees it; snapshot totals that cannot be are refused; names that are not UTF-8
// still give JSON; inputs are read once (pipes); a UTF-8 byte-order mark before JSON is skipped.
#include "snapshot_test_support.h"

#include <cudascope/analysis/figures.h>
#include <cudascope/analysis/file_kind.h>
#include <cudascope/analysis/rank_summary.h>
#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_stats.h>
#include <cudascope/util/byte_source.h>

#include <gmock/gmock.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace cudascope::analysis {
namespace {

using ::testing::HasSubstr;
using testing::data_path;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "reader_integrity_" + std::to_string(::getpid()) + "_" + name;
}

void put_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// `text` as one gzip member (header, deflate data, CRC-32 and length trailer).
std::string gzip(const std::string& text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, static_cast<uLong>(text.size())) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

// The corruptions `gzip -t` reports, each applied to a good gzip file.
struct Corruption {
  const char* name;
  std::function<std::string(std::string)> apply;
  bool only_cut;  // the data just stops early: a killed writer's file
};

const std::vector<Corruption>& corruptions() {
  static const std::vector<Corruption> all = {
      {"bad CRC-32", [](std::string g) { g[g.size() - 8] ^= 0x01; return g; }, false},
      {"bad length", [](std::string g) { g[g.size() - 4] ^= 0x01; return g; }, false},
      {"missing trailer", [](std::string g) { return g.substr(0, g.size() - 8); }, true},
      {"trailing garbage", [](std::string g) { return g + "trailing garbage"; }, false},
  };
  return all;
}

std::string rank_summary_text() {
  const TraceLoadResult loaded = load_trace(data_path("trace_golden.json"));
  EXPECT_TRUE(loaded.ok()) << loaded.error;
  return loaded.ok() ? rank_summary_json(summarize_rank(*loaded.model, "golden")) : std::string();
}

TEST(ReaderIntegrityTest, GoodGzipOfEachKindLoads) {
  const std::string pickle = gzip(testing::read_file(data_path("snap_small_p5.pickle")));
  ASSERT_TRUE(load_snapshot_from_bytes(pickle, "p.pickle.gz"));
  ASSERT_TRUE(load_snapshot_from_bytes(gzip(testing::read_file(data_path("snap_small.json"))), "s.json.gz"));
  ASSERT_TRUE(load_trace_text(gzip(testing::read_file(data_path("trace_golden.json"))), "t.json.gz").ok());
  const std::string path = temp_path("summary.json.gz");
  put_bytes(path, gzip(rank_summary_text()));
  EXPECT_TRUE(read_rank_summary(path).ok()) << read_rank_summary(path).error;
  std::remove(path.c_str());
}

TEST(ReaderIntegrityTest, PickleSnapshotRefusesEveryGzipCorruption) {
  const std::string good = gzip(testing::read_file(data_path("snap_small_p5.pickle")));
  const std::string path = temp_path("snap.pickle.gz");
  for (const Corruption& c : corruptions()) {
    SCOPED_TRACE(c.name);
    const std::string bad = c.apply(good);
    auto from_bytes = load_snapshot_from_bytes(bad, "snap.pickle.gz");
    ASSERT_FALSE(from_bytes) << "a damaged gzip pickle loaded";
    EXPECT_THAT(from_bytes.error().expected, HasSubstr("gzip data")) << from_bytes.error().message();
    put_bytes(path, bad);
    auto from_file = load_snapshot(path);
    ASSERT_FALSE(from_file);
    EXPECT_EQ(from_file.error().message(), path + from_bytes.error().message().substr(std::string("snap.pickle.gz").size()));
  }
  std::remove(path.c_str());
}

TEST(ReaderIntegrityTest, PlainPickleRefusesDataAfterStop) {
  const std::string bytes = testing::read_file(data_path("snap_small_p5.pickle")) + "junk";
  auto r = load_snapshot_from_bytes(bytes, "joined.pickle");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().expected, HasSubstr("expected the end of the data")) << r.error().message();
  EXPECT_EQ(r.error().offset, bytes.size() - 4);
}

TEST(ReaderIntegrityTest, JsonSnapshotRefusesEveryGzipCorruption) {
  const std::string good = gzip(testing::read_file(data_path("snap_small.json")));
  for (const Corruption& c : corruptions()) {
    SCOPED_TRACE(c.name);
    auto r = load_snapshot_from_bytes(c.apply(good), "snap.json.gz");
    ASSERT_FALSE(r) << "a damaged gzip JSON snapshot loaded";
    EXPECT_THAT(r.error().expected, HasSubstr("gzip data")) << r.error().message();
  }
}

TEST(ReaderIntegrityTest, TraceRefusesGzipDamageAndReadsACutOneUpToItsEnd) {
  const std::string good = gzip(testing::read_file(data_path("trace_golden.json")));
  const TraceLoadResult whole = load_trace_text(good, "t.json.gz");
  ASSERT_TRUE(whole.ok()) << whole.error;
  for (const Corruption& c : corruptions()) {
    SCOPED_TRACE(c.name);
    const TraceLoadResult r = load_trace_text(c.apply(good), "t.json.gz");
    if (c.only_cut) {
      // A killed writer leaves no trailer: every event is there, and the model says it was cut.
      ASSERT_TRUE(r.ok()) << r.error;
      EXPECT_TRUE(r.model->cut_short);
      EXPECT_EQ(r.model->event_count(), whole.model->event_count());
      EXPECT_THAT(r.model->notes, ::testing::Contains(HasSubstr("gzip data ends early")));
    } else {
      ASSERT_FALSE(r.ok()) << "a damaged gzip trace loaded with " << r.model->event_count() << " events";
      EXPECT_THAT(r.error, HasSubstr("t.json.gz: gzip data is corrupt")) << r.error;
    }
  }
}

TEST(ReaderIntegrityTest, RankSummaryRefusesEveryGzipCorruption) {
  const std::string good = gzip(rank_summary_text());
  const std::string path = temp_path("summary.json.gz");
  for (const Corruption& c : corruptions()) {
    SCOPED_TRACE(c.name);
    put_bytes(path, c.apply(good));
    const RankSummaryReadResult r = read_rank_summary(path);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error, HasSubstr(path + ": gzip data")) << r.error;
  }
  std::remove(path.c_str());
}

// snap_small.json with `edit` applied.
std::string edited_snapshot(const std::function<void(nlohmann::json&)>& edit) {
  nlohmann::json doc = testing::expected_stats("snap_small.json");
  edit(doc);
  return doc.dump();
}

TEST(ReaderIntegrityTest, SnapshotWithMoreAllocatedThanReservedIsRefused) {
  // 4.4 GB allocated in a segment of 375 MB.
  auto r = load_snapshot_from_bytes(edited_snapshot([](nlohmann::json& d) {
                                      d["segments"][0]["total_size"] = 375u << 20;
                                      d["segments"][0]["allocated_size"] = 4400000000ull;
                                    }),
                                    "s.json");
  ASSERT_FALSE(r);
  EXPECT_THAT(r.error().expected, HasSubstr("allocated_size 4400000000 is larger than the segment's total_size"));
  EXPECT_THAT(r.error().expected, HasSubstr("segment 0"));
  for (const char* field : {"active_size", "requested_size"}) {
    auto over = load_snapshot_from_bytes(edited_snapshot([&](nlohmann::json& d) {
                                           d["segments"][0][field] = d["segments"][0]["total_size"].get<uint64_t>() + 1;
                                         }),
                                         "s.json");
    ASSERT_FALSE(over) << field;
    EXPECT_THAT(over.error().expected, HasSubstr(std::string(field) + " ")) << over.error().message();
  }
}

TEST(ReaderIntegrityTest, SizesPastAnyDevicesMemoryAreRefused) {
  auto huge_segment = load_snapshot_from_bytes(edited_snapshot([](nlohmann::json& d) {
                                                 d["segments"][0]["total_size"] = 9200000000000000000ull;
                                               }),
                                               "s.json");
  ASSERT_FALSE(huge_segment);
  EXPECT_THAT(huge_segment.error().expected, HasSubstr("larger than any device's memory"));

  // Many segments that each look fine but reserve more than a device has together.
  auto many = load_snapshot_from_bytes(edited_snapshot([](nlohmann::json& d) {
                                         nlohmann::json segment = d["segments"][0];
                                         segment["blocks"] = nlohmann::json::array();
                                         segment["total_size"] = uint64_t{1} << 43;  // 8 TiB each
                                         for (int i = 0; i < 3; ++i) {
                                           segment["address"] = static_cast<uint64_t>(i + 1) << 50;
                                           d["segments"].push_back(segment);
                                         }
                                       }),
                                       "s.json");
  ASSERT_FALSE(many);
  EXPECT_THAT(many.error().expected, HasSubstr("device 0: its segments reserve"));

  auto huge_alloc = load_snapshot_from_bytes(edited_snapshot([](nlohmann::json& d) {
                                               d["device_traces"][0][0]["size"] = uint64_t{1} << 50;
                                             }),
                                             "s.json");
  ASSERT_FALSE(huge_alloc);
  EXPECT_THAT(huge_alloc.error().expected, HasSubstr("trace entry 0: size"));
}

TEST(ReaderIntegrityTest, AnOomRequestMayAskForMoreThanADeviceHas) {
  auto r = load_snapshot_from_bytes(edited_snapshot([](nlohmann::json& d) {
                                      nlohmann::json oom = d["device_traces"][0][0];
                                      oom["action"] = "oom";
                                      oom["size"] = uint64_t{1} << 50;
                                      oom["device_free"] = 1024;
                                      d["device_traces"][0].push_back(oom);
                                    }),
                                    "s.json");
  EXPECT_TRUE(r) << r.error().message();
}

TEST(ReaderIntegrityTest, StatsJsonOfNamesThatAreNotUtf8IsStillJson) {
  // A lone surrogate escape, raw invalid bytes, a truncated sequence and an overlong '/'.
  const std::string trace = std::string("{\"traceEvents\":[") +
                            "{\"name\":\"lone \\ud800 half\",\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":2}," +
                            "{\"name\":\"raw \xff\xfe bytes\",\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":4,\"dur\":2}," +
                            "{\"name\":\"cut \xe2\x82\",\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":7,\"dur\":2}," +
                            "{\"name\":\"overlong \xc0\xaf ok \xe2\x82\xac\",\"ph\":\"X\",\"cat\":\"kernel\",\"pid\":0,\"tid\":7,\"ts\":9,\"dur\":2}" +
                            "]}";
  const TraceLoadResult loaded = load_trace_text(trace, "names.json");
  ASSERT_TRUE(loaded.ok()) << loaded.error;
  const std::string json = format_stats(compute_stats(*loaded.model), StatsFormat::json);
  nlohmann::json parsed;
  ASSERT_NO_THROW(parsed = nlohmann::json::parse(json)) << json;
  const std::string text = parsed.dump();
  EXPECT_THAT(text, HasSubstr("lone \xef\xbf\xbd"));
  EXPECT_THAT(text, HasSubstr("raw \xef\xbf\xbd\xef\xbf\xbd bytes"));
  EXPECT_THAT(text, HasSubstr("ok \xe2\x82\xac")) << "valid UTF-8 passes through";
}

// A named pipe with a writer: the input is opened once, its head tells its kind and the
// loader reads on from the same stream (opening it twice would block or see nothing).
TEST(ReaderIntegrityTest, APipeIsToldApartAndReadOnce) {
  for (const char* name : {"trace_golden.json", "snap_small.json"}) {
    SCOPED_TRACE(name);
    const std::string fifo = temp_path("pipe");
    std::remove(fifo.c_str());
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string bytes = gzip(testing::read_file(data_path(name)));
    std::thread writer([&] { put_bytes(fifo, bytes); });
    std::string error;
    auto input = util::PeekedInput::open(fifo, UINT64_MAX, error);
    ASSERT_NE(input, nullptr) << error;
    auto kind = detect_file_kind(*input);
    ASSERT_TRUE(kind) << kind.error().message();
    EXPECT_FALSE(is_rank_summary(*input));
    if (kind.value() == FileKind::trace) {
      const TraceLoadResult r = load_trace(*input);
      ASSERT_TRUE(r.ok()) << r.error;
      EXPECT_EQ(r.model->event_count(), load_trace(data_path(name)).model->event_count());
    } else {
      auto r = load_snapshot(*input);
      ASSERT_TRUE(r) << r.error().message();
      EXPECT_EQ(r.value().segments.size(), load_snapshot(data_path(name)).value().segments.size());
    }
    writer.join();
    std::remove(fifo.c_str());
  }
}

// Editors and tools on Windows start UTF-8 text with a byte-order mark (EF BB BF); JSON lets a
// parser ignore it (RFC 8259, section 8.1). Every JSON input is read past it, plain or gzip, to
// the figures the same file gives without it, with nothing reported; offsets stay the file's.
TEST(ReaderIntegrityTest, AUtf8ByteOrderMarkBeforeJsonIsSkipped) {
  const std::string bom = "\xEF\xBB\xBF";
  for (const char* name : {"trace_golden.json", "chrome_plain.json", "snap_small.json", "snap_shape_pt113.json"}) {
    for (const bool gz : {false, true}) {
      SCOPED_TRACE(std::string(name) + (gz ? ", gzip" : ", plain"));
      const std::string path = temp_path(std::string("bom_") + name + (gz ? ".gz" : ""));
      const std::string marked = bom + testing::read_file(data_path(name));
      put_bytes(path, gz ? gzip(marked) : marked);
      std::string error;
      auto input = util::PeekedInput::open(path, UINT64_MAX, error);
      ASSERT_NE(input, nullptr) << error;
      const auto kind = detect_file_kind(*input);
      ASSERT_TRUE(kind) << kind.error().message();
      EXPECT_EQ(kind.value(), detect_file_kind(data_path(name)).value());
      if (kind.value() == FileKind::trace) {
        const TraceLoadResult with = load_trace(*input), without = load_trace(data_path(name));
        ASSERT_TRUE(with.ok()) << with.error;
        EXPECT_GT(with.model->event_count(), 0u);
        EXPECT_EQ(with.model->event_count(), without.model->event_count());
        EXPECT_EQ(format_stats(compute_stats(*with.model), StatsFormat::csv),
                  format_stats(compute_stats(*without.model), StatsFormat::csv));
        EXPECT_EQ(with.model->format_problems, without.model->format_problems) << "the mark is no problem";
        EXPECT_EQ(with.model->notes, without.model->notes);
        TraceFollower follower(path);
        EXPECT_EQ(follower.poll(), static_cast<long long>(without.model->event_count())) << follower.error();
        EXPECT_TRUE(follower.finished());
      } else {
        auto with = load_snapshot(*input);
        ASSERT_TRUE(with) << with.error().message();
        const Figures f = compute_figures(with.value()), g = compute_figures(testing::load_fixture(name));
        EXPECT_GT(f.reserved_bytes, 0u);
        EXPECT_EQ(f.segments, g.segments);
        EXPECT_EQ(f.blocks, g.blocks);
        EXPECT_EQ(f.trace_entries, g.trace_entries);
        EXPECT_EQ(f.reserved_bytes, g.reserved_bytes);
        EXPECT_EQ(f.allocated_bytes, g.allocated_bytes);
        EXPECT_EQ(f.requested_bytes, g.requested_bytes);
        EXPECT_EQ(f.peak_reserved_bytes, g.peak_reserved_bytes);
      }
      std::remove(path.c_str());
    }
  }
  // Errors name the file's byte, the mark counted: 3 + 11 for the second '}' here.
  const TraceLoadResult trace = load_trace_text(bom + R"([{"ph":"X"}}])", "bad.json");
  EXPECT_EQ(trace.error, "bad.json: byte 14: expected ',' or ']' after event 0");
  const std::string snapshot = R"({"segments": [], "device_traces": 7})";
  const auto plain = load_snapshot_from_bytes(snapshot, "bad.json"), marked = load_snapshot_from_bytes(bom + snapshot, "bad.json");
  ASSERT_FALSE(plain);
  ASSERT_FALSE(marked);
  EXPECT_EQ(marked.error().offset, plain.error().offset + 3);
  EXPECT_EQ(marked.error().expected, plain.error().expected);
}

// The mark belongs before text only: before a pickle's bytes it is no mark, and the file is
// refused as any file whose first byte starts neither a pickle nor JSON is, naming byte 0.
TEST(ReaderIntegrityTest, AUtf8ByteOrderMarkBeforeAPickleIsRefused) {
  const std::string marked = "\xEF\xBB\xBF" + testing::read_file(data_path("snap_small_p5.pickle"));
  ASSERT_TRUE(load_snapshot(data_path("snap_small_p5.pickle"))) << "the pickle itself loads";
  const auto refused = load_snapshot_from_bytes(marked, "marked.pickle");
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().offset, 0u);
  EXPECT_EQ(refused.error().expected, "expected a pickle (protocol 2-5, first byte 0x80) or a JSON object, found byte 0xef");
  for (const bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzip" : "plain");
    const std::string path = temp_path(std::string("bom.pickle") + (gz ? ".gz" : ""));
    put_bytes(path, gz ? gzip(marked) : marked);
    const auto kind = detect_file_kind(path);
    ASSERT_FALSE(kind);
    EXPECT_EQ(kind.error().offset, 0u);
    EXPECT_EQ(kind.error().expected,
              "expected an allocator snapshot (a pickle or a JSON object) or a trace (JSON), found byte 0xef");
    const auto loaded = load_snapshot(path);
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.error().offset, 0u);
    EXPECT_EQ(loaded.error().expected, refused.error().expected);
    std::remove(path.c_str());
  }
  // Before JSON, whitespace first or not, and before nothing (an empty text file), it is a mark.
  EXPECT_TRUE(load_snapshot_from_bytes("\xEF\xBB\xBF\r\n{\"segments\": [], \"device_traces\": []}", "crlf.json"));
  const auto empty = load_snapshot_from_bytes("\xEF\xBB\xBF", "empty.json");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().offset, 3u);
  EXPECT_EQ(empty.error().expected, "expected a snapshot (pickle or JSON), found an empty file");
}

}  // namespace
}  // namespace cudascope::analysis
