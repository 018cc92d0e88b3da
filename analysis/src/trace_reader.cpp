#include <cudascope/analysis/trace_reader.h>
#include <cudascope/exporters/trace_output.h>

#include <simdjson.h>
#include <zlib.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

namespace cudascope::analysis {
namespace {

constexpr std::string_view kEventsKey = "\"traceEvents\":[";

// True when `line` is one whole JSON object (braces balanced outside strings).
bool complete_object(std::string_view line) {
  if (line.empty() || line.front() != '{') return false;
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '{') ++depth;
    else if (c == '}' && --depth == 0) return i + 1 == line.size();
  }
  return false;
}

std::int64_t to_ns(double us) { return static_cast<std::int64_t>(std::llround(us * 1000.0)); }

}  // namespace

std::string read_maybe_gzip(const std::string& path, std::string& error) {
  error.clear();
  std::ifstream probe(path, std::ios::binary);
  if (!probe) {
    error = "cannot open trace '" + path + "': " + std::strerror(errno);
    return {};
  }
  char magic[2] = {};
  probe.read(magic, 2);
  const bool gz = probe.gcount() == 2 && static_cast<unsigned char>(magic[0]) == 0x1f && static_cast<unsigned char>(magic[1]) == 0x8b;
  if (!gz) {
    probe.seekg(0);
    return std::string((std::istreambuf_iterator<char>(probe)), std::istreambuf_iterator<char>());
  }
  gzFile in = gzopen(path.c_str(), "rb");
  if (in == nullptr) {
    error = "cannot open trace '" + path + "'";
    return {};
  }
  std::string text;
  char chunk[1 << 16];
  for (int n; (n = gzread(in, chunk, sizeof chunk)) > 0;) text.append(chunk, static_cast<std::size_t>(n));
  gzclose(in);  // a stream cut short ends with an error here; what was read is kept
  return text;
}

std::string close_truncated_trace(const std::string& text) {
  const std::size_t events = text.find(kEventsKey);
  if (events == std::string::npos) return {};
  if (text.find("\"complete\":true", events) != std::string::npos) return text;
  // Events are one per line: keep the lines that are whole objects, stop at the first that is not.
  std::size_t keep = events + kEventsKey.size();
  std::size_t position = keep;
  while (position < text.size()) {
    std::size_t start = text.find('{', position);
    if (start == std::string::npos) break;
    const std::size_t end_of_line = text.find('\n', start);
    const std::size_t stop = end_of_line == std::string::npos ? text.size() : end_of_line;
    std::string_view line(text.data() + start, stop - start);
    while (!line.empty() && (line.back() == ',' || line.back() == '\r')) line.remove_suffix(1);
    if (!complete_object(line)) break;
    keep = start + line.size();
    position = stop;
  }
  return text.substr(0, keep) + "\n],\"cudascopeSummary\":{\"complete\":false,\"truncated\":true}}\n";
}

TraceReadResult parse_trace(std::string text, const std::string& origin) {
  TraceReadResult result;
  Trace& trace = result.trace;
  if (text.find("\"complete\":true") == std::string::npos) {
    std::string closed = close_truncated_trace(text);
    if (closed.empty()) {
      result.error = "'" + origin + "' is not a cudascope trace (no \"traceEvents\" array)";
      return result;
    }
    trace.repaired = true;
    text = std::move(closed);
  }
  simdjson::dom::parser parser;
  simdjson::padded_string padded(text);
  simdjson::dom::element root;
  if (auto error = parser.parse(padded).get(root)) {
    result.error = "'" + origin + "' is not valid JSON: " + simdjson::error_message(error);
    return result;
  }
  simdjson::dom::array events;
  if (root["traceEvents"].get_array().get(events)) {
    result.error = "'" + origin + "' has no \"traceEvents\" array";
    return result;
  }
  std::size_t index = 0;
  std::string_view text_value;
  for (simdjson::dom::element element : events) {
    const std::string where = "event " + std::to_string(index++);
    simdjson::dom::object object;
    if (element.get_object().get(object)) {
      trace.format_problems.push_back(where + ": not an object");
      continue;
    }
    TraceEvent e;
    if (object["ph"].get_string().get(text_value)) {
      trace.format_problems.push_back(where + ": \"ph\" missing or not a string");
      continue;
    }
    e.ph = text_value;
    if (!object["name"].get_string().get(text_value)) e.name = text_value;
    if (!object["cat"].get_string().get(text_value)) e.cat = text_value;
    if (object["pid"].get_int64().get(e.pid)) trace.format_problems.push_back(where + " (" + e.ph + "): \"pid\" missing or not an integer");
    if (object["tid"].get_int64().get(e.tid)) trace.format_problems.push_back(where + " (" + e.ph + "): \"tid\" missing or not an integer");
    double number = 0;
    if (!object["ts"].get_double().get(number)) {
      e.ts_ns = to_ns(number);
    } else if (e.ph != "M") {
      trace.format_problems.push_back(where + " (" + e.ph + "): \"ts\" missing or not a number");
    }
    if (!object["dur"].get_double().get(number)) {
      e.dur_ns = to_ns(number);
      if (number < 0) trace.format_problems.push_back(where + ": negative \"dur\"");
    } else if (e.ph == "X") {
      trace.format_problems.push_back(where + " (X): \"dur\" missing or not a number");
    }
    simdjson::dom::element id;
    if (!object["id"].get(id)) {
      std::int64_t integer = 0;
      if (!id.get_int64().get(integer)) e.id = std::to_string(integer);
      else if (!id.get_string().get(text_value)) e.id = text_value;
    }
    simdjson::dom::object args;
    if (!object["args"].get_object().get(args)) {
      e.args_json = simdjson::minify(args);
      std::int64_t bytes = 0;
      if (!args["bytes"].get_int64().get(bytes)) e.bytes = bytes;
      if (e.ph == "C") {
        for (auto [key, value] : args) {
          if (!value.is_number()) trace.format_problems.push_back(where + " (C): counter \"" + std::string(key) + "\" is not a number");
        }
      }
    }
    trace.events.push_back(std::move(e));
  }
  simdjson::dom::array devices;
  if (!root["deviceProperties"].get_array().get(devices)) {
    for (simdjson::dom::element d : devices) {
      TraceDevice device;
      std::int64_t number = 0;
      if (!d["id"].get_int64().get(number)) device.id = static_cast<int>(number);
      if (!d["name"].get_string().get(text_value)) device.name = text_value;
      if (!d["totalGlobalMem"].get_int64().get(number)) device.total_memory = number;
      trace.devices.push_back(device);
    }
  }
  simdjson::dom::object summary;
  if (!root["cudascopeSummary"].get_object().get(summary)) {
    bool complete = false;
    if (!summary["complete"].get_bool().get(complete)) trace.complete = complete;
    std::int64_t number = 0;
    if (!summary["dropped"]["buffer"].get_int64().get(number)) trace.dropped_buffer = number;
    if (!summary["dropped"]["cupti"].get_int64().get(number)) trace.dropped_cupti = number;
  }
  // A trace cut short has no summary: the dropped-records counters say what it lost so far.
  if (!trace.complete) {
    for (const TraceEvent& e : trace.events) {
      if (e.ph != "C" || e.name != "cudascope dropped records") continue;
      simdjson::dom::parser small;
      simdjson::dom::object counters;
      if (small.parse(e.args_json).get_object().get(counters)) continue;
      std::int64_t value = 0;
      if (!counters["buffer"].get_int64().get(value)) trace.dropped_buffer = std::max(trace.dropped_buffer, value);
      if (!counters["cupti"].get_int64().get(value)) trace.dropped_cupti = std::max(trace.dropped_cupti, value);
    }
  }
  simdjson::dom::object info;
  if (!root["distributedInfo"].get_object().get(info)) {
    std::int64_t number = 0;
    if (!info["rank"].get_int64().get(number)) trace.rank = static_cast<int>(number);
    if (!info["world_size"].get_int64().get(number)) trace.world_size = static_cast<int>(number);
  }
  if (!root["cudascope"]["source"].get_string().get(text_value)) trace.source = text_value;
  return result;
}

TraceReadResult read_trace(const std::string& path) {
  std::string error;
  std::string text = read_maybe_gzip(path, error);
  if (!error.empty()) return {Trace{}, error};
  return parse_trace(std::move(text), path);
}

std::string repair_trace_file(const std::string& path) {
  std::string error;
  const std::string text = read_maybe_gzip(path, error);
  if (!error.empty()) return error;
  if (text.find("\"complete\":true") != std::string::npos) return {};
  const std::string closed = close_truncated_trace(text);
  if (closed.empty()) return "'" + path + "' is not a cudascope trace (no \"traceEvents\" array)";
  try {
    exporters::TraceOutput out(path);
    out.write(closed);
    out.close();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace cudascope::analysis
