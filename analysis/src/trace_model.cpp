#include <cudascope/analysis/trace_model.h>

#include "trace_json.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <system_error>

namespace cudascope::analysis {
namespace {

// Finds member `key` at the top level of the minified object `json`; its value's text.
std::optional<std::string_view> member(std::string_view json, std::string_view key) {
  if (json.size() < 2 || json.front() != '{') return std::nullopt;
  std::size_t i = 1;
  const auto skip_string = [&](std::size_t at) {  // at: the opening quote; returns past the closing one
    for (++at; at < json.size(); ++at) {
      if (json[at] == '\\') ++at;
      else if (json[at] == '"') return at + 1;
    }
    return json.size();
  };
  const auto skip_value = [&](std::size_t at) {
    int depth = 0;
    for (; at < json.size(); ++at) {
      const char c = json[at];
      if (c == '"') {
        at = skip_string(at) - 1;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (depth == 0) return at;
        --depth;
      } else if (c == ',' && depth == 0) {
        return at;
      }
    }
    return json.size();
  };
  while (i < json.size() && json[i] == '"') {
    const std::size_t key_end = skip_string(i);
    const std::string_view name = json.substr(i + 1, key_end - i - 2);
    const std::size_t value_start = key_end + 1;  // past ':'
    const std::size_t value_end = skip_value(value_start);
    if (name == key) return json.substr(value_start, value_end - value_start);
    i = value_end + 1;
  }
  return std::nullopt;
}

}  // namespace

const char* to_string(TraceFormat format) noexcept {
  switch (format) {
    case TraceFormat::cudascope: return "cudascope";
    case TraceFormat::kineto: return "kineto";
    case TraceFormat::chrome: return "chrome";
  }
  return "chrome";
}

// --- TraceModel ---

TraceModel::TraceModel() = default;
TraceModel::~TraceModel() = default;
TraceModel::TraceModel(TraceModel&&) noexcept = default;
TraceModel& TraceModel::operator=(TraceModel&&) noexcept = default;

std::string_view TraceModel::args_json(const Event& e) const {
  if (e.args == kNoArgs) return {};
  const char* at = args_chunks_[e.args >> 32].get() + (e.args & 0xffffffffu);
  std::uint32_t size = 0;
  std::memcpy(&size, at, sizeof size);
  return {at + sizeof size, size};
}

std::optional<std::int64_t> TraceModel::arg_int(const Event& e, std::string_view key) const {
  const auto text = member(args_json(e), key);
  std::int64_t value = 0;
  if (!text || !detail::parse_integer(*text, value)) return std::nullopt;
  return value;
}

std::optional<std::uint64_t> TraceModel::arg_uint(const Event& e, std::string_view key) const {
  const auto text = member(args_json(e), key);
  std::uint64_t value = 0;
  if (!text || text->empty()) return std::nullopt;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (error != std::errc() || end != text->data() + text->size()) return std::nullopt;
  return value;
}

std::optional<double> TraceModel::arg_number(const Event& e, std::string_view key) const {
  const auto text = member(args_json(e), key);
  double value = 0;
  if (!text || !detail::parse_double(*text, value)) return std::nullopt;
  return value;
}

std::optional<std::string> TraceModel::arg_string(const Event& e, std::string_view key) const {
  const auto text = member(args_json(e), key);
  if (!text || text->size() < 2 || text->front() != '"') return std::nullopt;
  const std::string_view raw = *text;
  // Decode the escapes the text kept.
  std::string out;
  for (std::size_t i = 1; i + 1 < raw.size(); ++i) {
    if (raw[i] != '\\' || i + 2 >= raw.size()) {
      out += raw[i];
      continue;
    }
    const char kind = raw[++i];
    switch (kind) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case 'r': out += '\r'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'u':
        if (i + 4 < raw.size()) {
          const unsigned code = static_cast<unsigned>(std::stoul(std::string(raw.substr(i + 1, 4)), nullptr, 16));
          if (code < 0x80) out += static_cast<char>(code);
          else out += '?';
          i += 4;
        }
        break;
      default: out += kind;
    }
  }
  return out;
}

std::string TraceModel::id_text(const Event& e) const {
  if (e.id == kNoId) return {};
  if (id_is_string(e)) return std::string(string(static_cast<std::uint32_t>(e.id)));
  return std::to_string(e.id);
}

std::vector<std::uint32_t> TraceModel::track_order() const {
  std::vector<std::uint32_t> order(tracks_.size());
  for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    const Track& ta = tracks_[a];
    const Track& tb = tracks_[b];
    const Process& pa = processes_[ta.process];
    const Process& pb = processes_[tb.process];
    if (ta.process != tb.process) {
      if (pa.sort_index != pb.sort_index) return pa.sort_index < pb.sort_index;
      return pa.pid < pb.pid;
    }
    if (ta.sort_index != tb.sort_index) return ta.sort_index < tb.sort_index;
    return ta.tid < tb.tid;
  });
  return order;
}

std::string TraceModel::track_label(std::uint32_t index) const {
  const Track& t = tracks_[index];
  if (t.name != kNoString) return std::string(string(t.name));
  const std::string tid = t.tid_text != kNoString ? std::string(string(t.tid_text)) : std::to_string(t.tid);
  return (processes_[t.process].device >= 0 ? "stream " : "thread ") + tid;
}

std::string TraceModel::process_label(std::uint32_t index) const {
  const Process& p = processes_[index];
  const std::string pid = p.pid_text != kNoString ? std::string(string(p.pid_text)) : std::to_string(p.pid);
  if (p.device >= 0) return "GPU " + std::to_string(p.device);
  if (p.name != kNoString) return std::string(string(p.name)) + " (" + pid + ")";
  return "process " + pid;
}

std::size_t TraceModel::memory_bytes() const noexcept {
  std::size_t bytes = chunks_.size() * (sizeof(Event) << kChunkBits) + args_bytes_;
  bytes += strings_.size() * 96;  // a deque slot, a hash node, the text (names are short on average)
  bytes += processes_.capacity() * sizeof(Process) + tracks_.capacity() * sizeof(Track) + flows_.capacity() * sizeof(Flow);
  for (const Track& t : tracks_) bytes += t.events.capacity() * sizeof(std::uint32_t);
  for (const Counter& c : counters_) {
    for (const CounterSeries& s : c.series) bytes += s.ts_ns.capacity() * 8 + s.values.capacity() * 8;
  }
  return bytes;
}

}  // namespace cudascope::analysis
