// Parsing of the allocator configuration: PyTorch's lexer and rules (AllocatorConfig in
// c10), with errors that name the variable, the key and the value at fault.
#include <cudascope/cuda/allocator_config.h>
#include <cudascope/util/env_value.h>

#include "../check.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <vector>

namespace cudascope::cuda {
namespace {

constexpr std::size_t kMB = 1u << 20;

bool is_power_of_two(std::size_t v) { return v != 0 && (v & (v - 1)) == 0; }

class Parser {
 public:
  Parser(const std::string& text, const std::string& source) : text_(text), source_(source) { lex(); }

  AllocatorConfig run() {
    AllocatorConfig config;
    config.text = text_;
    for (i_ = 0; i_ < tokens_.size(); ++i_) {
      const std::string key = tokens_[i_];
      if (key == "max_split_size_mb") {
        config.max_split_size = megabytes(key, 20);
      } else if (key == "max_non_split_rounding_mb") {
        config.max_non_split_rounding_size = megabytes(key, 20);
      } else if (key == "garbage_collection_threshold") {
        const std::string value = value_of(key);
        const double threshold = to_double(key, value);
        if (!(threshold > 0.0 && threshold < 1.0)) fail(key, value, "must lie in (0.0, 1.0)");
        config.garbage_collection_threshold = threshold;
      } else if (key == "roundup_power2_divisions") {
        parse_divisions(config);
      } else if (key == "backend") {
        const std::string value = value_of(key);
        if (value != "native" && value != "cudaMallocAsync") fail(key, value, "valid: native, cudaMallocAsync");
        config.backend = value;
      } else if (key == "expandable_segments") {
        config.expandable_segments = boolean(key);
      } else if (key == "release_lock_on_cudamalloc") {
        config.release_lock_on_cudamalloc = boolean(key);
      } else if (key == "pinned_use_cuda_host_register" || key == "pinned_use_hip_host_register") {
        config.pinned_use_cuda_host_register = boolean(key);
      } else if (key == "pinned_use_background_threads") {
        config.pinned_use_background_threads = boolean(key);
      } else if (key == "graph_capture_record_stream_reuse") {
        config.graph_capture_record_stream_reuse = boolean(key);
      } else if (key == "pinned_num_register_threads") {
        const std::string value = value_of(key);
        const std::size_t threads = to_unsigned(key, value);
        if (!is_power_of_two(threads) || threads > 128) fail(key, value, "must be a power of 2, at most 128");
        config.pinned_num_register_threads = threads;
      } else if (key == "pinned_reserve_segment_size_mb") {
        const std::string value = value_of(key);
        const std::size_t mb = to_unsigned(key, value);
        if (mb == 0) fail(key, value, "must be greater than 0");
        if (mb > std::numeric_limits<std::size_t>::max() / kMB) fail(key, value, "too large");
        config.pinned_reserve_segment_size = mb * kMB;
      } else {
        fail(key, "", "unknown key; valid: max_split_size_mb, max_non_split_rounding_mb, "
                      "garbage_collection_threshold, roundup_power2_divisions, backend, expandable_segments, "
                      "release_lock_on_cudamalloc, pinned_use_cuda_host_register, pinned_num_register_threads, "
                      "pinned_use_background_threads, pinned_reserve_segment_size_mb, "
                      "graph_capture_record_stream_reuse");
      }
      if (i_ + 1 < tokens_.size()) expect(",", key);
    }
    return config;
  }

 private:
  // PyTorch's lexer: ',', ':', '[' and ']' are tokens; spaces are dropped.
  void lex() {
    std::string word;
    for (char c : text_) {
      if (c == ',' || c == ':' || c == '[' || c == ']') {
        if (!word.empty()) tokens_.push_back(std::move(word));
        word.clear();
        tokens_.emplace_back(1, c);
      } else if (c != ' ') {
        word.push_back(c);
      }
    }
    if (!word.empty()) tokens_.push_back(word);
  }

  [[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& why) const {
    std::string message = source_ + "='" + text_ + "': ";
    message += value.empty() ? "key '" + key + "'" : "key '" + key + "' value '" + value + "'";
    message += ": " + why;
    detail::throw_error(error_code::kInvalidValue, source_.c_str(), __FILE__, __LINE__, message);
  }

  void expect(const char* token, const std::string& key) {
    ++i_;
    if (i_ >= tokens_.size() || tokens_[i_] != token) {
      fail(key, i_ < tokens_.size() ? tokens_[i_] : "", std::string("expected '") + token + "'");
    }
  }

  std::string value_of(const std::string& key) {
    expect(":", key);
    ++i_;
    if (i_ >= tokens_.size()) fail(key, "", "missing value");
    return tokens_[i_];
  }

  std::size_t to_unsigned(const std::string& key, const std::string& value) const {
    if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos) {
      fail(key, value, "not a non-negative integer");
    }
    return std::stoull(value);
  }

  double to_double(const std::string& key, const std::string& value) const {
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size()) fail(key, value, "not a number");
    return v;
  }

  bool boolean(const std::string& key) {
    const std::string value = value_of(key);
    if (value != "True" && value != "False") fail(key, value, "expected True or False");
    return value == "True";
  }

  std::size_t megabytes(const std::string& key, std::size_t minimum) {
    const std::string value = value_of(key);
    std::size_t mb = to_unsigned(key, value);
    if (mb < minimum) fail(key, value, "too small, must be >= " + std::to_string(minimum));
    mb = std::min(mb, std::numeric_limits<std::size_t>::max() / kMB);
    return mb * kMB;
  }

  // Either one power of two for every interval, or [MB:divisions,...,>:divisions] where
  // the first entry also covers every smaller interval and '>' every later one.
  void parse_divisions(AllocatorConfig& config) {
    const std::string key = "roundup_power2_divisions";
    expect(":", key);
    ++i_;
    if (i_ >= tokens_.size()) fail(key, "", "missing value");
    auto& table = config.roundup_power2_divisions;
    if (tokens_[i_] != "[") {
      const std::size_t divisions = to_unsigned(key, tokens_[i_]);
      if (!is_power_of_two(divisions)) fail(key, tokens_[i_], "divisions must be a power of 2");
      table.fill(divisions);
      return;
    }
    std::size_t last_index = 0;
    bool first = true;
    while (++i_ < tokens_.size() && tokens_[i_] != "]") {
      const std::string interval = tokens_[i_];
      const std::string divisions_text = value_of(key);
      const std::size_t divisions = to_unsigned(key, divisions_text);
      if (divisions != 0 && !is_power_of_two(divisions)) {
        fail(key, interval + ":" + divisions_text, "divisions must be a power of 2 or 0");
      }
      if (interval == ">") {
        // Every interval after the last one named (PyTorch 2.11; older releases also
        // overwrote the last named interval).
        std::fill(table.begin() + static_cast<std::ptrdiff_t>(std::min(last_index + 1, table.size())), table.end(),
                  divisions);
      } else {
        const std::size_t mb = to_unsigned(key, interval);
        if (!is_power_of_two(mb)) fail(key, interval + ":" + divisions_text, "intervals must be powers of 2 (MB)");
        std::size_t index = static_cast<std::size_t>(63 - __builtin_clzll(mb));
        index = std::min(index, table.size() - 1);
        if (first) {
          std::fill(table.begin(), table.begin() + static_cast<std::ptrdiff_t>(index), divisions);
          first = false;
        }
        table[index] = divisions;
        last_index = index;
      }
      if (i_ + 1 < tokens_.size() && tokens_[i_ + 1] != "]") expect(",", key);
    }
    if (i_ >= tokens_.size()) fail(key, "", "missing ']'");
  }

  const std::string& text_;
  const std::string& source_;
  std::vector<std::string> tokens_;
  std::size_t i_ = 0;
};

}  // namespace

AllocatorConfig AllocatorConfig::parse(const std::string& text, const std::string& source) {
  return Parser(text, source).run();
}

AllocatorConfig AllocatorConfig::from_environment() {
  for (const char* name : {"CUDASCOPE_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"}) {
    if (const auto text = util::env_text(name)) return parse(*text, name);
  }
  return AllocatorConfig{};
}

}  // namespace cudascope::cuda
