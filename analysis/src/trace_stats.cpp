#include <cudascope/analysis/event_kind.h>
#include <cudascope/analysis/trace_stats.h>
#include <cudascope/util/json_escape.h>

#include "category_kinds.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <unordered_map>

namespace cudascope::analysis {
namespace {

void add(DurationStat& stat, std::int64_t duration) {
  if (stat.count == 0 || duration < stat.min_ns) stat.min_ns = duration;
  if (stat.count == 0 || duration > stat.max_ns) stat.max_ns = duration;
  ++stat.count;
  stat.total_ns += duration;
  stat.sum_squares_ns2 += static_cast<double>(duration) * static_cast<double>(duration);
}

// Per-name figures keyed by the interned name, turned into a table at the end.
using ByName = std::unordered_map<std::uint32_t, DurationStat>;

std::vector<DurationStat> sorted(const TraceModel& model, ByName& by_name) {
  std::vector<DurationStat> out;
  out.reserve(by_name.size());
  for (auto& [name, stat] : by_name) {
    stat.name = model.string(name);
    out.push_back(std::move(stat));
  }
  std::sort(out.begin(), out.end(), [](const DurationStat& a, const DurationStat& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return out;
}

// "Memcpy HtoD" -> "HtoD"; Kineto's "Memcpy DtoH (Device -> Pageable)" -> "DtoH".
std::string copy_kind(std::string_view name) {
  if (name.rfind("Memcpy ", 0) == 0) name.remove_prefix(7);
  return std::string(name.substr(0, name.find(' ')));
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

std::string us(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", ns / 1000.0);
  return text;
}

std::string us(std::int64_t ns) { return us(static_cast<double>(ns)); }

struct Section {
  const char* csv_name;
  const char* title;
  const char* column;
  const std::vector<DurationStat>* rows;
};

std::vector<Section> duration_sections(const TraceStats& stats) {
  return {{"nvtx", "NVTX ranges and user annotations", "Range", &stats.ranges},
          {"gpu_annotation", "GPU annotations", "Annotation", &stats.gpu_annotations},
          {"cpu_op", "CPU ops", "Op", &stats.cpu_ops},
          {"api", "CUDA API calls", "Call", &stats.api_calls},
          {"slice", "Other slices", "Name", &stats.other_slices}};
}

std::string format_csv(const TraceStats& stats) {
  std::ostringstream out;
  const double gpu_total = static_cast<double>(std::max<std::int64_t>(1, stats.kernel_total_ns));
  out << "section,name,count,total_us,average_us,min_us,max_us,share_percent,bytes\n";
  for (const DurationStat& k : stats.kernels) {
    char share[16];
    std::snprintf(share, sizeof share, "%.2f", 100.0 * static_cast<double>(k.total_ns) / gpu_total);
    out << "kernel," << csv_field(k.name) << ',' << k.count << ',' << us(k.total_ns) << ',' << us(k.average_ns()) << ','
        << us(k.min_ns) << ',' << us(k.max_ns) << ',' << share << ",\n";
  }
  for (const Section& section : duration_sections(stats)) {
    for (const DurationStat& r : *section.rows) {
      out << section.csv_name << ',' << csv_field(r.name) << ',' << r.count << ',' << us(r.total_ns) << ',' << us(r.average_ns())
          << ',' << us(r.min_ns) << ',' << us(r.max_ns) << ",,\n";
    }
  }
  for (const CopyStat& c : stats.copies) {
    out << "memcpy," << csv_field(c.kind) << ',' << c.count << ',' << us(c.total_ns) << ",,,,," << c.bytes << '\n';
  }
  out << "dropped,buffer," << stats.dropped_buffer << ",,,,,,\n";
  out << "dropped,cupti," << stats.dropped_cupti << ",,,,,,\n";
  return out.str();
}

void json_durations(std::string& out, const char* key, const std::vector<DurationStat>& rows) {
  out += ",\n\"";
  out += key;
  out += "\":[";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const DurationStat& r = rows[i];
    out += i == 0 ? "\n" : ",\n";
    out += "{\"name\":";
    util::append_json_string(out, r.name);
    out += ",\"count\":" + std::to_string(r.count) + ",\"total_ns\":" + std::to_string(r.total_ns) +
           ",\"min_ns\":" + std::to_string(r.min_ns) + ",\"max_ns\":" + std::to_string(r.max_ns) + "}";
  }
  out += "]";
}

std::string format_json(const TraceStats& stats) {
  std::string out = "{\"format\":";
  util::append_json_string(out, stats.format);
  out += ",\"events\":" + std::to_string(stats.events) + ",\"complete\":" + (stats.complete ? "true" : "false") +
         ",\"cut_short\":" + (stats.cut_short ? "true" : "false") + ",\"kernel_total_ns\":" + std::to_string(stats.kernel_total_ns) +
         ",\"dropped\":{\"buffer\":" + std::to_string(stats.dropped_buffer) + ",\"cupti\":" + std::to_string(stats.dropped_cupti) +
         "},\"notes\":[";
  for (std::size_t i = 0; i < stats.notes.size(); ++i) {
    if (i > 0) out += ',';
    util::append_json_string(out, stats.notes[i]);
  }
  out += "]";
  json_durations(out, "kernels", stats.kernels);
  json_durations(out, "ranges", stats.ranges);
  json_durations(out, "gpu_annotations", stats.gpu_annotations);
  json_durations(out, "cpu_ops", stats.cpu_ops);
  json_durations(out, "api_calls", stats.api_calls);
  json_durations(out, "other_slices", stats.other_slices);
  out += ",\n\"memory_operations\":[";
  for (std::size_t i = 0; i < stats.copies.size(); ++i) {
    const CopyStat& c = stats.copies[i];
    out += i == 0 ? "\n" : ",\n";
    out += "{\"kind\":";
    util::append_json_string(out, c.kind);
    out += ",\"count\":" + std::to_string(c.count) + ",\"bytes\":" + std::to_string(c.bytes) +
           ",\"total_ns\":" + std::to_string(c.total_ns) + "}";
  }
  out += "]}\n";
  return out;
}

void table(std::ostringstream& out, const Section& section) {
  if (section.rows->empty()) return;
  char line[512];
  out << '\n' << section.title << " (" << section.rows->size() << " names)\n";
  std::snprintf(line, sizeof line, "%10s %14s %12s %12s %12s  %s\n", "Count", "Total(us)", "Avg(us)", "Min(us)", "Max(us)",
                section.column);
  out << line;
  for (const DurationStat& r : *section.rows) {
    std::snprintf(line, sizeof line, "%10lld %14s %12s %12s %12s  ", static_cast<long long>(r.count), us(r.total_ns).c_str(),
                  us(r.average_ns()).c_str(), us(r.min_ns).c_str(), us(r.max_ns).c_str());
    out << line << r.name << '\n';
  }
}

std::string format_table(const TraceStats& stats) {
  std::ostringstream out;
  const double gpu_total = static_cast<double>(std::max<std::int64_t>(1, stats.kernel_total_ns));
  char line[512];
  out << "Kernels (" << stats.kernels.size() << " names, " << us(stats.kernel_total_ns) << " us on the GPU)\n";
  std::snprintf(line, sizeof line, "%8s %10s %14s %12s %12s %12s  %s\n", "Time(%)", "Count", "Total(us)", "Avg(us)", "Min(us)",
                "Max(us)", "Name");
  out << line;
  for (const DurationStat& k : stats.kernels) {
    std::snprintf(line, sizeof line, "%8.2f %10lld %14s %12s %12s %12s  ", 100.0 * static_cast<double>(k.total_ns) / gpu_total,
                  static_cast<long long>(k.count), us(k.total_ns).c_str(), us(k.average_ns()).c_str(), us(k.min_ns).c_str(),
                  us(k.max_ns).c_str());
    out << line << k.name << '\n';
  }
  const std::vector<Section> sections = duration_sections(stats);
  // The NVTX table is always shown (an empty one says there were none); the others when present.
  out << "\nNVTX ranges and user annotations (" << stats.ranges.size() << " names)\n";
  std::snprintf(line, sizeof line, "%10s %14s %12s %12s %12s  %s\n", "Count", "Total(us)", "Avg(us)", "Min(us)", "Max(us)", "Range");
  out << line;
  for (const DurationStat& r : stats.ranges) {
    std::snprintf(line, sizeof line, "%10lld %14s %12s %12s %12s  ", static_cast<long long>(r.count), us(r.total_ns).c_str(),
                  us(r.average_ns()).c_str(), us(r.min_ns).c_str(), us(r.max_ns).c_str());
    out << line << r.name << '\n';
  }
  out << "\nMemory operations\n";
  std::snprintf(line, sizeof line, "%10s %16s %14s  %s\n", "Count", "Bytes", "Total(us)", "Kind");
  out << line;
  for (const CopyStat& c : stats.copies) {
    std::snprintf(line, sizeof line, "%10lld %16lld %14s  %s\n", static_cast<long long>(c.count), static_cast<long long>(c.bytes),
                  us(c.total_ns).c_str(), c.kind.c_str());
    out << line;
  }
  for (std::size_t i = 1; i < sections.size(); ++i) table(out, sections[i]);
  out << "\nDropped records: " << stats.dropped_buffer << " (record buffers), " << stats.dropped_cupti << " (CUPTI)\n";
  out << "Trace (" << stats.format << "): " << stats.events << " events, ";
  if (stats.cut_short) out << "cut short (read up to its last complete event)";
  else if (stats.complete) out << "complete";
  else out << "not finished (the recording process did not close it)";
  out << '\n';
  for (const std::string& note : stats.notes) out << "Note: " << note << '\n';
  return out.str();
}

}  // namespace

TraceStats compute_stats(const TraceModel& model) {
  TraceStats stats;
  stats.events = static_cast<std::int64_t>(model.event_count());
  stats.dropped_buffer = model.dropped_buffer;
  stats.dropped_cupti = model.dropped_cupti;
  stats.complete = model.complete;
  stats.cut_short = model.cut_short;
  stats.format = to_string(model.format);
  stats.notes = model.notes;
  detail::CategoryKinds kind_of(model);
  ByName kernels, ranges, gpu_annotations, cpu_ops, api_calls, other;
  std::map<std::string, CopyStat> copies;
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const TraceModel::Event& e = model.event(i);
    if (e.ph == 'X') {
      switch (kind_of(e)) {
        case EventKind::kernel:
          add(kernels[e.name], e.dur_ns);
          stats.kernel_total_ns += e.dur_ns;
          break;
        case EventKind::memcpy:
        case EventKind::memset: {
          const std::string kind = kind_of(e) == EventKind::memset ? "Memset" : copy_kind(model.name(e));
          CopyStat& copy = copies[kind];
          copy.kind = kind;
          ++copy.count;
          copy.bytes += std::max<std::int64_t>(0, model.arg_int(e, "bytes").value_or(0));
          copy.total_ns += e.dur_ns;
          copy.sum_squares_ns2 += static_cast<double>(e.dur_ns) * static_cast<double>(e.dur_ns);
          break;
        }
        case EventKind::nvtx: add(ranges[e.name], e.dur_ns); break;
        case EventKind::gpu_annotation: add(gpu_annotations[e.name], e.dur_ns); break;
        case EventKind::cpu_op: add(cpu_ops[e.name], e.dur_ns); break;
        case EventKind::runtime:
        case EventKind::driver: add(api_calls[e.name], e.dur_ns); break;
        default: add(other[e.name], e.dur_ns); break;
      }
    } else if ((e.ph == 'B' || e.ph == 'b') && e.dur_ns >= 0) {
      // Closed ranges only: an open one has no duration.
      add(kind_of(e) == EventKind::nvtx ? ranges[e.name] : other[e.name], e.dur_ns);
    }
  }
  stats.kernels = sorted(model, kernels);
  stats.ranges = sorted(model, ranges);
  stats.gpu_annotations = sorted(model, gpu_annotations);
  stats.cpu_ops = sorted(model, cpu_ops);
  stats.api_calls = sorted(model, api_calls);
  stats.other_slices = sorted(model, other);
  for (auto& [kind, copy] : copies) stats.copies.push_back(copy);
  return stats;
}

TraceStats compute_stats(const Trace& trace) {
  if (trace.model) return compute_stats(*trace.model);
  return TraceStats{};
}

std::string format_stats(const TraceStats& stats, StatsFormat format) {
  switch (format) {
    case StatsFormat::csv: return format_csv(stats);
    case StatsFormat::json: return format_json(stats);
    case StatsFormat::table: break;
  }
  return format_table(stats);
}

std::string format_stats(const TraceStats& stats, bool csv) { return format_stats(stats, csv ? StatsFormat::csv : StatsFormat::table); }

std::vector<std::string> validate_trace(const TraceModel& model) {
  std::vector<std::string> problems = model.format_problems;
  const bool own = model.format == TraceFormat::cudascope;
  std::size_t timed = 0;
  std::vector<std::vector<std::uint32_t>> open(model.tracks().size());
  std::map<std::pair<std::uint32_t, std::uint64_t>, int> async_open;
  struct Flow {
    int starts = 0;
    int finishes = 0;
    std::int64_t start_ts = 0;
    std::int64_t finish_ts = 0;
  };
  std::map<std::pair<std::uint32_t, std::uint64_t>, Flow> flows;
  const auto track_text = [&](std::uint32_t track) {
    const TraceModel::Track& t = model.tracks()[track];
    const TraceModel::Process& p = model.processes()[t.process];
    const std::string pid = p.pid_text != kNoString ? std::string(model.string(p.pid_text)) : std::to_string(p.pid);
    const std::string tid = t.tid_text != kNoString ? std::string(model.string(t.tid_text)) : std::to_string(t.tid);
    return "pid " + pid + " tid " + tid;
  };
  for (std::size_t i = 0; i < model.event_count(); ++i) {
    const TraceModel::Event& e = model.event(i);
    if (e.ph != 'M') ++timed;
    if (own) {  // our writer promises numeric ids; other producers (Kineto's "Spans") use strings
      const TraceModel::Track& t = model.tracks()[e.track];
      if (model.processes()[t.process].pid_text != kNoString || (e.flags & TraceModel::kFlagPidWasText) != 0)
        problems.push_back("event " + std::to_string(i) + " (" + std::string(1, e.ph) + "): \"pid\" missing or not an integer");
      if (t.tid_text != kNoString || (e.flags & TraceModel::kFlagTidWasText) != 0)
        problems.push_back("event " + std::to_string(i) + " (" + std::string(1, e.ph) + "): \"tid\" missing or not an integer");
    }
    const auto where = [&] { return "event " + std::to_string(i) + " (" + std::string(1, e.ph) + " '" + std::string(model.name(e)) + "')"; };
    if (e.ph == 'B') {
      open[e.track].push_back(static_cast<std::uint32_t>(i));
    } else if (e.ph == 'E') {
      auto& stack = open[e.track];
      if (stack.empty()) {
        problems.push_back(where() + ": \"E\" with no open \"B\" on " + track_text(e.track));
      } else {
        const TraceModel::Event& begin = model.event(stack.back());
        if (e.name != kNoString && e.name != begin.name)
          problems.push_back(where() + ": closes '" + std::string(model.name(begin)) + "'");
        stack.pop_back();
      }
    } else if (e.ph == 'b') {
      ++async_open[{e.cat, e.id}];
    } else if (e.ph == 'e') {
      if (--async_open[{e.cat, e.id}] < 0) problems.push_back(where() + ": \"e\" with no open \"b\" of id " + model.id_text(e));
    } else if (e.ph == 's' || e.ph == 'f') {
      if (e.id == kNoId) {
        problems.push_back(where() + ": flow event without \"id\"");
        continue;
      }
      Flow& flow = flows[{e.cat, e.id}];
      if (e.ph == 's') {
        ++flow.starts;
        flow.start_ts = e.ts_ns;
      } else {
        ++flow.finishes;
        flow.finish_ts = e.ts_ns;
      }
    }
  }
  if (timed == 0) problems.push_back("the trace holds no events (besides metadata): nothing to check");
  for (const auto& [key, flow] : flows) {
    const std::string id = std::string(model.string(key.first)) + "/" + std::to_string(key.second);
    // Kineto writes an "f" for every runtime call and an "s" for some copies that never get
    // their "f": Perfetto draws neither; only our own traces promise whole pairs.
    if ((flow.starts == 0 || flow.finishes == 0) && !own) continue;
    if (flow.starts != 1 || flow.finishes != 1) {
      problems.push_back("flow " + id + ": " + std::to_string(flow.starts) + " \"s\" and " + std::to_string(flow.finishes) +
                         " \"f\" (want one each)");
    } else if (flow.start_ts > flow.finish_ts) {
      problems.push_back("flow " + id + ": \"s\" is after its \"f\"");
    }
  }
  if (!model.cut_short && (model.complete || model.format != TraceFormat::cudascope)) {
    for (std::size_t t = 0; t < open.size(); ++t) {
      if (!open[t].empty()) {
        problems.push_back(track_text(static_cast<std::uint32_t>(t)) + ": " + std::to_string(open[t].size()) +
                           " \"B\" never closed ('" + std::string(model.name(model.event(open[t].back()))) + "')");
      }
    }
    for (const auto& [key, count] : async_open) {
      if (count > 0) problems.push_back("async range " + std::string(model.string(key.first)) + "/" + std::to_string(key.second) + " never closed");
    }
  }
  return problems;
}

std::vector<std::string> validate_trace(const Trace& trace) {
  if (trace.model) return validate_trace(*trace.model);
  return {"no trace was read"};
}

}  // namespace cudascope::analysis
