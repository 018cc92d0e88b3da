// Replaying allocation sequences recorded with PyTorch, to compare memory_stats key by
// key (cudascope replay, and the fidelity tests).
#include "caching_allocator.h"
#include "replay_session.h"
#include "whole_file.h"

#include "../check.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/error.h>
#include <cudascope/cuda/memory.h>
#include <cudascope/util/byte_source.h>
#include <cudascope/util/input_budget.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unordered_map>

namespace cudascope::cuda::memory {
namespace {

// One line of the file: a flat JSON object of strings and numbers.
class FlatObject {
 public:
  FlatObject(const std::string& line, const std::string& where) : where_(where) { parse(line); }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  const std::string& text(const std::string& key) const {
    auto it = values_.find(key);
    if (it == values_.end()) fail("missing \"" + key + "\"");
    return it->second;
  }
  std::int64_t number(const std::string& key) const {
    const std::string& t = text(key);
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0') fail("\"" + key + "\" is not an integer: " + t);
    if (errno == ERANGE) fail("\"" + key + "\" is out of range: " + t);
    return v;
  }
  double real(const std::string& key) const {
    const std::string& t = text(key);
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (t.empty() || *end != '\0') fail("\"" + key + "\" is not a number: " + t);
    return v;
  }
  [[noreturn]] void fail(const std::string& why) const {
    detail::throw_error(error_code::kInvalidValue, "replay", __FILE__, __LINE__, where_ + ": " + why);
  }

 private:
  void parse(const std::string& s) {
    std::size_t i = 0;
    auto ws = [&] {
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    };
    auto str = [&] {
      if (i >= s.size() || s[i] != '"') fail("expected a string");
      std::string out;
      for (++i; i < s.size() && s[i] != '"'; ++i) {
        if (s[i] == '\\' && i + 1 < s.size()) ++i;
        out += s[i];
      }
      if (i >= s.size()) fail("unterminated string");
      ++i;
      return out;
    };
    ws();
    if (i >= s.size() || s[i] != '{') fail("expected a JSON object");
    ++i;
    ws();
    if (i < s.size() && s[i] == '}') return;
    for (;;) {
      ws();
      const std::string key = str();
      ws();
      if (i >= s.size() || s[i] != ':') fail("expected ':'");
      ++i;
      ws();
      std::string value;
      if (i < s.size() && s[i] == '"') {
        value = str();
      } else {
        const std::size_t start = i;
        while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ' ') ++i;
        value = s.substr(start, i - start);
      }
      values_[key] = value;
      ws();
      if (i < s.size() && s[i] == ',') {
        ++i;
        continue;
      }
      if (i < s.size() && s[i] == '}') return;
      fail("expected ',' or '}'");
    }
  }
  std::string where_;
  std::unordered_map<std::string, std::string> values_;
};

// A replay line is one flat object of a few fields; anything longer is not a replay file
// (/dev/zero, a binary file), and stopping here keeps memory bounded whatever the input.
constexpr std::size_t kMaxLine = 1 << 20;

[[noreturn]] void fail_at(const std::string& where, const std::string& why) {
  detail::throw_error(error_code::kInvalidValue, "replay", __FILE__, __LINE__, where + ": " + why);
}

// A std::istream as a util::ByteSource, for replay(std::istream&).
class StreamSource final : public util::ByteSource {
 public:
  explicit StreamSource(std::istream& in) : in_(in) {}
  size_t read(char* out, size_t n) override {
    in_.read(out, static_cast<std::streamsize>(n));
    if (in_.bad()) error_ = "read error";
    return static_cast<size_t>(in_.gcount());
  }
  double progress() const override { return 0.0; }

 private:
  std::istream& in_;
};

// The lines of a sequence, each at most kMaxLine bytes, read through a bounded window.
class LineReader {
 public:
  // At most util::input_budget() bytes in all (after decompression), as every reader:
  // a file of empty lines (or a gzip bomb of them) stops at the budget.
  LineReader(util::ByteSource& source, std::string name, std::uint64_t budget)
      : reader_(source, budget), name_(std::move(name)) {}
  // The next line without its '\n'; false at the end of the input. Throws on a read error
  // or an over-long line, naming the file and line.
  bool next(std::string& line) {
    for (std::size_t scanned = 0;;) {
      if (skip_blank_ && scanned == 0 && skip_newlines()) continue;
      const char* start = reader_.data();
      const void* newline = std::memchr(start + scanned, '\n', reader_.available() - scanned);
      if (newline != nullptr) return take(line, static_cast<const char*>(newline) - start, 1);
      scanned = reader_.available();
      if (scanned > kMaxLine)
        fail_at(where(line_number_ + 1), "a line longer than " + std::to_string(kMaxLine >> 20) +
                                             " MiB; expected JSON lines (a header, then one op per line)");
      if (!reader_.ensure(scanned + 1)) {
        if (!reader_.error().empty()) fail_at(where(line_number_ + 1), reader_.error());
        return scanned > 0 && take(line, scanned, 0);
      }
    }
  }
  // From now on next() passes over empty lines, a window at a time rather than one call
  // each, so a file of newlines costs a scan, not a call per byte.
  void skip_blank_lines() { skip_blank_ = true; }
  std::size_t line_number() const { return line_number_; }
  std::string where(std::size_t line) const { return name_ + ":" + std::to_string(line); }
  const std::string& name() const { return name_; }

 private:
  bool take(std::string& line, std::size_t length, std::size_t terminator) {
    line.assign(reader_.data(), length);
    reader_.consume(length + terminator);
    ++line_number_;
    return true;
  }

  // Consumes the newlines at the front of the window; true when there were any.
  bool skip_newlines() {
    if (!reader_.ensure(1)) return false;
    const char* p = reader_.data();
    std::size_t n = 0;
    while (n < reader_.available() && p[n] == '\n') ++n;
    reader_.consume(n);
    line_number_ += n;
    return n > 0;
  }

  util::ByteReader reader_;
  std::string name_;
  std::size_t line_number_ = 0;
  bool skip_blank_ = false;
};

FlatObject read_header(LineReader& lines) {
  std::string line;
  if (!lines.next(line)) fail_at(lines.name(), "empty file");
  return FlatObject(line, lines.where(1));
}

}  // namespace

namespace {

// An op's "id": a recording's ids are never negative (one would wrap to 2^64 - 1).
std::uint64_t op_id(const FlatObject& op) {
  const std::int64_t id = op.number("id");
  if (id < 0) op.fail("\"id\" is negative: " + std::to_string(id));
  return static_cast<std::uint64_t>(id);
}

// The ops after the header, through the caching allocator of `device` (replay_session.h).
std::map<std::string, std::int64_t> replay_ops(LineReader& lines, const FlatObject& header, int device,
                                               const ReplayEnd& at_end = {}) {
  const std::string& name = lines.name();
  if (header.has("op")) header.fail("an op where the header belongs (a first line such as {\"conf\": \"\"})");
  const AllocatorConfig config = AllocatorConfig::parse(header.has("conf") ? header.text("conf") : "", name + " conf");
  std::optional<std::size_t> limit;
  if (header.has("memory_limit")) {
    const std::int64_t bytes = header.number("memory_limit");
    // 0 is a recording's: set_per_process_memory_fraction(0) makes every allocation fail.
    if (bytes < 0) header.fail("\"memory_limit\" is " + std::to_string(bytes) + "; expected bytes, 0 or more");
    limit = static_cast<std::size_t>(bytes);
  }
  std::size_t streams = 1;
  if (header.has("streams")) {
    const std::int64_t n = header.number("streams");
    if (n < 1 || n > 65) header.fail("\"streams\" is " + std::to_string(n) + "; expected 1 to 65");
    streams = static_cast<std::size_t>(n);
  }
  ReplaySession session(device, config, limit, streams, name);
  std::string line;
  lines.skip_blank_lines();
  while (lines.next(line)) {
    if (line.empty()) continue;
    const FlatObject op(line, lines.where(lines.line_number()));
    const std::string& kind = op.text("op");
    if (kind == "alloc") {
      const std::int64_t s = op.has("stream") ? op.number("stream") : 0;
      if (s < 0 || s > 64) op.fail("stream index out of range");
      const std::int64_t size = op.number("size");
      if (size < 0) op.fail("\"size\" is negative: " + std::to_string(size));
      const std::uint64_t id = op_id(op);
      // The first block would be lost to the sequence, never freed: not a recording.
      if (session.holds(id)) op.fail("id " + std::to_string(id) + " is allocated already (no free of it since)");
      // Recorded sequences include allocations that fail under a memory limit.
      session.alloc(id, static_cast<std::size_t>(size), static_cast<std::size_t>(s));
    } else if (kind == "free") {
      session.free(op_id(op));
    } else if (kind == "empty_cache") {
      session.empty_cache();
    } else if (kind == "reset_peak") {
      session.reset_peak();
    } else if (kind == "reset_accumulated") {
      session.reset_accumulated();
    } else {
      op.fail("unknown op \"" + kind + "\"; valid: alloc, free, empty_cache, reset_peak, reset_accumulated");
    }
  }
  auto stats = memory_stats(device);
  if (at_end) at_end();  // before the session frees what the sequence left
  return stats;
}

}  // namespace

std::map<std::string, std::int64_t> replay(std::istream& in, const std::string& name) {
  StreamSource source(in);
  LineReader lines(source, name, util::input_budget());
  const FlatObject header = read_header(lines);
  return replay_ops(lines, header, current_device());
}

namespace {

// Streamed line by line: memory stays bounded by one line whatever the file holds, and a
// file that is not a sequence fails on its first line, before any device is touched.
std::map<std::string, std::int64_t> replay_path(const std::string& path, const std::vector<std::uintptr_t>* addresses,
                                                const ReplayEnd& at_end = {}) {
  std::string error;
  const std::uint64_t budget = util::input_budget();
  auto source = util::open_input(path, budget, error);
  if (!source) fail_at(path, error);
  LineReader lines(*source, path, budget);
  const FlatObject header = read_header(lines);
  const int device = current_device();
  if (addresses == nullptr) return replay_ops(lines, header, device, at_end);
  detail::alloc::set_recorded_addresses(device, *addresses);
  std::map<std::string, std::int64_t> stats;
  try {
    stats = replay_ops(lines, header, device, at_end);
  } catch (...) {
    detail::alloc::set_recorded_addresses(device, {});
    throw;
  }
  const std::size_t used = detail::alloc::set_recorded_addresses(device, {});
  const auto mallocs = stats.find("num_device_alloc");
  // One address per cudaMalloc: fewer used than recorded leaves some over; more cudaMallocs
  // than used (counted where nothing reset the counters) ran past the end of the list. (An
  // empty list, as recorded for expandable segments, which map pages and make no cudaMalloc
  // that takes an address, is a replay with the sim's own addresses.)
  const bool past_end = !addresses->empty() && mallocs != stats.end() &&
                        mallocs->second > static_cast<std::int64_t>(used);
  if (used != addresses->size() || past_end) {
    fail_at(path, "the replay made " + (mallocs != stats.end() ? std::to_string(mallocs->second) : std::string("?")) +
                      " cudaMallocs and used " + std::to_string(used) + " of the " +
                      std::to_string(addresses->size()) +
                      " recorded addresses; they do not belong to this sequence (or not to this recording of it)");
  }
  return stats;
}

// A JSON list of unsigned integers: [address, address, ...].
std::vector<std::uintptr_t> read_addresses(const std::string& path) {
  const std::string text = detail::alloc::read_whole_file(path);
  std::size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string::npos || text[i] != '[') fail_at(path, "expected a JSON list of addresses");
  std::vector<std::uintptr_t> addresses;
  for (++i;;) {
    i = text.find_first_not_of(" \t\r\n,", i);
    if (i == std::string::npos) fail_at(path, "the list of addresses is not closed");
    if (text[i] == ']') break;
    const std::size_t end = text.find_first_not_of("0123456789", i);
    if (end == i || end - i > 20) fail_at(path, "expected an unsigned integer at offset " + std::to_string(i));
    const std::string digits = text.substr(i, end - i);
    errno = 0;
    const unsigned long long address = std::strtoull(digits.c_str(), nullptr, 10);
    if (errno == ERANGE) fail_at(path, "offset " + std::to_string(i) + ": " + digits + " is past 2^64-1, not an address");
    addresses.push_back(address);
    i = end;
  }
  return addresses;
}

}  // namespace

std::map<std::string, std::int64_t> replay_file(const std::string& path) { return replay_path(path, nullptr); }

std::map<std::string, std::int64_t> replay_file_with_addresses(const std::string& path,
                                                               const std::string& addresses_path) {
  return replay_file_with_addresses(path, read_recorded_addresses(addresses_path));
}

std::map<std::string, std::int64_t> replay_file_with_addresses(const std::string& path,
                                                               const std::vector<std::uintptr_t>& addresses) {
  return replay_path(path, &addresses);
}

std::map<std::string, std::int64_t> replay_file(const std::string& path, const std::vector<std::uintptr_t>& addresses,
                                                const ReplayEnd& at_end) {
  return replay_path(path, addresses.empty() ? nullptr : &addresses, at_end);
}

std::vector<std::uintptr_t> read_recorded_addresses(const std::string& addresses_path) {
  return read_addresses(addresses_path);
}

}  // namespace cudascope::cuda::memory
