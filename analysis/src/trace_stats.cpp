#include <cudascope/analysis/trace_stats.h>

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
}

std::vector<DurationStat> sorted(std::map<std::string, DurationStat>& by_name) {
  std::vector<DurationStat> out;
  for (auto& [name, stat] : by_name) {
    stat.name = name;
    out.push_back(stat);
  }
  std::stable_sort(out.begin(), out.end(), [](const DurationStat& a, const DurationStat& b) { return a.total_ns > b.total_ns; });
  return out;
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

}  // namespace

TraceStats compute_stats(const Trace& trace) {
  TraceStats stats;
  stats.events = static_cast<std::int64_t>(trace.events.size());
  stats.dropped_buffer = trace.dropped_buffer;
  stats.dropped_cupti = trace.dropped_cupti;
  stats.complete = trace.complete;
  std::map<std::string, DurationStat> kernels;
  std::map<std::string, DurationStat> ranges;
  std::map<std::string, CopyStat> copies;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<const TraceEvent*>> open;
  std::unordered_map<std::string, const TraceEvent*> open_async;
  for (const TraceEvent& e : trace.events) {
    if (e.ph == "X" && e.cat == "kernel") {
      add(kernels[e.name], e.dur_ns);
      stats.kernel_total_ns += e.dur_ns;
    } else if (e.ph == "X" && (e.cat == "gpu_memcpy" || e.cat == "gpu_memset")) {
      const std::string kind = e.cat == "gpu_memset" ? "Memset" : e.name.substr(e.name.find(' ') + 1);
      CopyStat& copy = copies[kind];
      copy.kind = kind;
      ++copy.count;
      copy.bytes += std::max<std::int64_t>(0, e.bytes);
      copy.total_ns += e.dur_ns;
    } else if (e.ph == "B" && e.cat == "nvtx") {
      open[{e.pid, e.tid}].push_back(&e);
    } else if (e.ph == "E" && e.cat == "nvtx") {
      auto& stack = open[{e.pid, e.tid}];
      if (stack.empty()) continue;
      add(ranges[stack.back()->name], e.ts_ns - stack.back()->ts_ns);
      stack.pop_back();
    } else if (e.ph == "b" && e.cat == "nvtx") {
      open_async[e.id] = &e;
    } else if (e.ph == "e" && e.cat == "nvtx") {
      auto it = open_async.find(e.id);
      if (it == open_async.end()) continue;
      add(ranges[it->second->name], e.ts_ns - it->second->ts_ns);
      open_async.erase(it);
    }
  }
  stats.kernels = sorted(kernels);
  stats.ranges = sorted(ranges);
  for (auto& [kind, copy] : copies) stats.copies.push_back(copy);
  return stats;
}

std::string format_stats(const TraceStats& stats, bool csv) {
  std::ostringstream out;
  const double gpu_total = static_cast<double>(std::max<std::int64_t>(1, stats.kernel_total_ns));
  if (csv) {
    out << "section,name,count,total_us,average_us,min_us,max_us,share_percent,bytes\n";
    for (const DurationStat& k : stats.kernels) {
      char share[16];
      std::snprintf(share, sizeof share, "%.2f", 100.0 * static_cast<double>(k.total_ns) / gpu_total);
      out << "kernel," << csv_field(k.name) << ',' << k.count << ',' << us(static_cast<double>(k.total_ns)) << ','
          << us(k.average_ns()) << ',' << us(static_cast<double>(k.min_ns)) << ',' << us(static_cast<double>(k.max_ns)) << ','
          << share << ",\n";
    }
    for (const DurationStat& r : stats.ranges) {
      out << "nvtx," << csv_field(r.name) << ',' << r.count << ',' << us(static_cast<double>(r.total_ns)) << ','
          << us(r.average_ns()) << ',' << us(static_cast<double>(r.min_ns)) << ',' << us(static_cast<double>(r.max_ns)) << ",,\n";
    }
    for (const CopyStat& c : stats.copies) {
      out << "memcpy," << c.kind << ',' << c.count << ',' << us(static_cast<double>(c.total_ns)) << ",,,,," << c.bytes << '\n';
    }
    out << "dropped,buffer," << stats.dropped_buffer << ",,,,,,\n";
    out << "dropped,cupti," << stats.dropped_cupti << ",,,,,,\n";
    return out.str();
  }
  char line[512];
  out << "Kernels (" << stats.kernels.size() << " names, " << us(static_cast<double>(stats.kernel_total_ns)) << " us on the GPU)\n";
  std::snprintf(line, sizeof line, "%8s %10s %14s %12s %12s %12s  %s\n", "Time(%)", "Count", "Total(us)", "Avg(us)", "Min(us)",
                "Max(us)", "Name");
  out << line;
  for (const DurationStat& k : stats.kernels) {
    std::snprintf(line, sizeof line, "%8.2f %10lld %14s %12s %12s %12s  ", 100.0 * static_cast<double>(k.total_ns) / gpu_total,
                  static_cast<long long>(k.count), us(static_cast<double>(k.total_ns)).c_str(), us(k.average_ns()).c_str(),
                  us(static_cast<double>(k.min_ns)).c_str(), us(static_cast<double>(k.max_ns)).c_str());
    out << line << k.name << '\n';
  }
  out << "\nNVTX ranges (" << stats.ranges.size() << " names)\n";
  std::snprintf(line, sizeof line, "%10s %14s %12s %12s %12s  %s\n", "Count", "Total(us)", "Avg(us)", "Min(us)", "Max(us)", "Range");
  out << line;
  for (const DurationStat& r : stats.ranges) {
    std::snprintf(line, sizeof line, "%10lld %14s %12s %12s %12s  ", static_cast<long long>(r.count),
                  us(static_cast<double>(r.total_ns)).c_str(), us(r.average_ns()).c_str(), us(static_cast<double>(r.min_ns)).c_str(),
                  us(static_cast<double>(r.max_ns)).c_str());
    out << line << r.name << '\n';
  }
  out << "\nMemory operations\n";
  std::snprintf(line, sizeof line, "%10s %16s %14s  %s\n", "Count", "Bytes", "Total(us)", "Kind");
  out << line;
  for (const CopyStat& c : stats.copies) {
    std::snprintf(line, sizeof line, "%10lld %16lld %14s  %s\n", static_cast<long long>(c.count), static_cast<long long>(c.bytes),
                  us(static_cast<double>(c.total_ns)).c_str(), c.kind.c_str());
    out << line;
  }
  out << "\nDropped records: " << stats.dropped_buffer << " (record buffers), " << stats.dropped_cupti << " (CUPTI)\n";
  out << "Trace: " << stats.events << " events, " << (stats.complete ? "complete" : "cut short (the process did not finish recording)")
      << '\n';
  return out.str();
}

std::vector<std::string> validate_trace(const Trace& trace) {
  std::vector<std::string> problems = trace.format_problems;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::string>> open;
  std::map<std::string, int> async_open;
  struct Flow {
    int starts = 0;
    int finishes = 0;
    std::int64_t start_ts = 0;
    std::int64_t finish_ts = 0;
  };
  std::map<std::string, Flow> flows;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    const std::string where = "event " + std::to_string(i) + " (" + e.ph + " '" + e.name + "')";
    if (e.ph == "B") {
      open[{e.pid, e.tid}].push_back(e.name);
    } else if (e.ph == "E") {
      auto& stack = open[{e.pid, e.tid}];
      if (stack.empty()) {
        problems.push_back(where + ": \"E\" with no open \"B\" on pid " + std::to_string(e.pid) + " tid " + std::to_string(e.tid));
      } else {
        if (!e.name.empty() && e.name != stack.back()) problems.push_back(where + ": closes '" + stack.back() + "'");
        stack.pop_back();
      }
    } else if (e.ph == "b") {
      ++async_open[e.cat + "/" + e.id];
    } else if (e.ph == "e") {
      if (--async_open[e.cat + "/" + e.id] < 0) problems.push_back(where + ": \"e\" with no open \"b\" of id " + e.id);
    } else if (e.ph == "s" || e.ph == "f") {
      if (e.id.empty()) {
        problems.push_back(where + ": flow event without \"id\"");
        continue;
      }
      Flow& flow = flows[e.cat + "/" + e.id];
      if (e.ph == "s") {
        ++flow.starts;
        flow.start_ts = e.ts_ns;
      } else {
        ++flow.finishes;
        flow.finish_ts = e.ts_ns;
      }
    }
  }
  for (const auto& [id, flow] : flows) {
    if (flow.starts != 1 || flow.finishes != 1) {
      problems.push_back("flow " + id + ": " + std::to_string(flow.starts) + " \"s\" and " + std::to_string(flow.finishes) +
                         " \"f\" (want one each)");
    } else if (flow.start_ts > flow.finish_ts) {
      problems.push_back("flow " + id + ": \"s\" is after its \"f\"");
    }
  }
  if (trace.complete) {
    for (const auto& [track, stack] : open) {
      if (!stack.empty()) {
        problems.push_back("pid " + std::to_string(track.first) + " tid " + std::to_string(track.second) + ": " +
                           std::to_string(stack.size()) + " \"B\" never closed ('" + stack.back() + "')");
      }
    }
    for (const auto& [id, count] : async_open) {
      if (count > 0) problems.push_back("async range " + id + " never closed");
    }
  }
  return problems;
}

}  // namespace cudascope::analysis
