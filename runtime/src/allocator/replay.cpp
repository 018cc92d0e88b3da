// Replaying allocation sequences recorded with PyTorch, to compare memory_stats key by
// key (cudascope replay, and the fidelity tests).
#include "caching_allocator.h"
#include "whole_file.h"

#include "../check.h"

#include <cudascope/cuda/device.h>
#include <cudascope/cuda/error.h>
#include <cudascope/cuda/memory.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
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
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end != '\0') fail("\"" + key + "\" is not an integer: " + t);
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

}  // namespace

std::map<std::string, std::int64_t> replay(std::istream& in, const std::string& name) {
  const int device = current_device();
  CUDASCOPE_CHECK(detail::alloc::live_allocations(device) == 0, error_code::kInvalidValue, "replay",
                  name + ": device " + std::to_string(device) + " has live allocations; a replay needs a clean allocator");
  std::string line;
  std::size_t line_number = 1;
  if (!std::getline(in, line)) {
    detail::throw_error(error_code::kInvalidValue, "replay", __FILE__, __LINE__, name + ": empty file");
  }
  const FlatObject header(line, name + ":1");
  const AllocatorConfig saved = allocator_settings();
  std::unordered_map<std::int64_t, void*> live;
  auto cleanup = [&] {
    for (auto& [id, ptr] : live) caching_allocator_delete(ptr);
    live.clear();
    empty_cache();
    detail::alloc::set_config(saved);
    detail::alloc::clear_memory_limit(device);
    reset_accumulated_memory_stats(device);
    reset_peak_memory_stats(device);
  };
  std::map<std::string, std::int64_t> result;
  try {
    // A fresh allocator: nothing cached (released under the configuration that cached it,
    // since oversize counts depend on max_split_size), counters at zero.
    empty_cache();
    detail::alloc::set_config(AllocatorConfig::parse(header.has("conf") ? header.text("conf") : "", name + " conf"));
    reset_accumulated_memory_stats(device);
    reset_peak_memory_stats(device);
    if (header.has("memory_limit")) set_per_process_memory_limit(static_cast<std::size_t>(header.number("memory_limit")), device);
    std::vector<Stream> streams{current_stream(device)};
    while (std::getline(in, line)) {
      ++line_number;
      if (line.empty()) continue;
      const FlatObject op(line, name + ":" + std::to_string(line_number));
      const std::string& kind = op.text("op");
      if (kind == "alloc") {
        const std::int64_t s = op.has("stream") ? op.number("stream") : 0;
        if (s < 0 || s > 64) op.fail("stream index out of range");
        while (streams.size() <= static_cast<std::size_t>(s)) streams.emplace_back(device);
        try {
          void* ptr = caching_allocator_alloc(static_cast<std::size_t>(op.number("size")), device,
                                              streams[static_cast<std::size_t>(s)]);
          live[op.number("id")] = ptr;
        } catch (const OutOfMemoryError&) {
          // Recorded sequences include allocations that fail under a memory limit.
        }
      } else if (kind == "free") {
        auto it = live.find(op.number("id"));
        if (it != live.end()) {
          caching_allocator_delete(it->second);
          live.erase(it);
        }
      } else if (kind == "empty_cache") {
        empty_cache();
      } else if (kind == "reset_peak") {
        reset_peak_memory_stats(device);
      } else if (kind == "reset_accumulated") {
        reset_accumulated_memory_stats(device);
      } else {
        op.fail("unknown op \"" + kind + "\"; valid: alloc, free, empty_cache, reset_peak, reset_accumulated");
      }
    }
    result = memory_stats(device);
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  return result;
}

std::map<std::string, std::int64_t> replay_file(const std::string& path) {
  std::istringstream in(detail::alloc::read_whole_file(path));
  const std::string suffix = ".jsonl.gz";
  const std::string sidecar = path.ends_with(suffix)
                                  ? path.substr(0, path.size() - suffix.size()) + ".segments.json.gz"
                                  : std::string();
  const int device = current_device();
  if (!sidecar.empty() && backend_name() == "sim" && std::ifstream(sidecar).good()) {
    // [address, address, ...]
    std::vector<std::uintptr_t> addresses;
    const std::string text = detail::alloc::read_whole_file(sidecar);
    for (std::size_t i = text.find_first_of("0123456789"); i != std::string::npos;) {
      std::size_t end = text.find_first_not_of("0123456789", i);
      addresses.push_back(std::stoull(text.substr(i, end - i)));
      i = end == std::string::npos ? end : text.find_first_of("0123456789", end);
    }
    detail::alloc::set_recorded_addresses(device, std::move(addresses));
  }
  try {
    auto stats = replay(in, path);
    detail::alloc::set_recorded_addresses(device, {});
    return stats;
  } catch (...) {
    detail::alloc::set_recorded_addresses(device, {});
    throw;
  }
}

}  // namespace cudascope::cuda::memory
