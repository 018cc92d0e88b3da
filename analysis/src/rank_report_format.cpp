// format_rank_report: the merged ranks as aligned tables, CSV or JSON.
#include <cudascope/analysis/rank_merge.h>
#include <cudascope/util/json_escape.h>

#include <algorithm>
#include <cstdio>

namespace cudascope::analysis {
namespace {

using Rows = std::vector<std::vector<std::string>>;

std::string ms(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns) / 1e6);
  return text;
}

std::string percent(std::int64_t part, std::int64_t whole) {
  if (whole <= 0) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

Rows rank_rows(const RankReport& report) {
  Rows rows{{"rank", "host", "steps", "step mean ms", "step max ms", "compute %", "comm %", "exposed comm %", "copy %",
             "idle %", "file"}};
  for (const RankRow& r : report.ranks) {
    const std::int64_t length = r.sum.end_ns;
    rows.push_back({r.rank >= 0 ? std::to_string(r.rank) : "-", r.host.empty() ? "-" : r.host, std::to_string(r.steps),
                    r.steps > 0 ? ms(r.step_mean_ns) : "-", r.steps > 0 ? ms(r.step_max_ns) : "-",
                    percent(r.sum.compute_ns, length), percent(r.sum.communication_ns, length),
                    percent(r.sum.exposed_communication_ns, length), percent(r.sum.copy_ns, length),
                    percent(r.sum.idle_ns, length), r.file});
  }
  return rows;
}

Rows step_rows(const RankReport& report) {
  Rows rows{{"step", "ranks", "fastest ms", "fastest rank", "median ms", "slowest ms", "slowest rank",
             "slowest-median ms", "slowest-median %", "slowest-fastest ms", "most exposed comm ms", "its rank"}};
  for (const StepRow& s : report.steps) {
    rows.push_back({s.step, std::to_string(s.ranks), ms(s.fastest_ns), s.fastest, ms(s.median_ns), ms(s.slowest_ns),
                    s.slowest, ms(s.over_median_ns()), percent(s.over_median_ns(), s.median_ns), ms(s.over_fastest_ns()),
                    ms(s.most_exposed_ns), s.most_exposed});
  }
  return rows;
}

Rows communicator_rows(const RankReport& report) {
  Rows rows{{"communicator", "description", "members", "ranks", "paired by", "collectives", "partial", "median ms",
             "wait median ms", "wait max ms", "last to arrive"}};
  const std::string rule = to_string(report.collective_pairing);
  for (const CommunicatorRow& c : report.communicators) {
    const std::string last = c.last_to_arrive.empty()
                                 ? "-"
                                 : c.last_to_arrive + " (" + std::to_string(c.last_to_arrive_count) + " of " +
                                       std::to_string(c.collectives) + ")";
    rows.push_back({c.communicator, c.description.empty() ? "-" : c.description, c.members.empty() ? "-" : c.members,
                    c.ranks, rule, std::to_string(c.collectives), std::to_string(c.partial), ms(c.median_ns),
                    ms(c.wait_median_ns), ms(c.wait_max_ns), last});
  }
  return rows;
}

std::string us(std::int64_t ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns) / 1e3);
  return text;
}

// Why a rank's clock is as it is, where the clock's name alone does not say.
std::string clock_why(const RankClock& c) {
  if (c.clock != RankClock::Clock::unaligned) return c.clock == RankClock::Clock::one_clock ? "same host as the reference" : "";
  if (c.own_collectives == 0) return "times as recorded: its input carries no collectives (none ran, or a summary without them)";
  return "times as recorded: none of its " + std::to_string(c.own_collectives) + " collectives pairs with rank " +
         std::to_string(c.reference_rank) + "'s or an aligned rank's";
}

// Each rank's clock; shown only when the ranks name more than one host.
Rows clock_rows(const RankReport& report) {
  Rows rows{{"rank", "host", "clock", "offset us", "error us", "collectives", "paired by", "via rank", "spread us", "why"}};
  for (const RankClock& c : report.clocks.ranks) {
    const bool aligned = c.clock == RankClock::Clock::aligned;
    rows.push_back({std::to_string(c.rank), c.host.empty() ? "-" : c.host, to_string(c.clock),
                    aligned ? us(c.alignment.offset_ns) : "0.000", aligned ? us(c.alignment.error_ns) : "-",
                    aligned ? std::to_string(c.alignment.collectives) : "-", aligned ? to_string(c.alignment.pairing) : "-",
                    c.alignment.via_rank >= 0 ? std::to_string(c.alignment.via_rank) : "-",
                    aligned ? us(c.alignment.spread_ns) : "-", clock_why(c).empty() ? "-" : clock_why(c)});
  }
  return rows;
}

std::string aligned(const Rows& rows) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (std::size_t c = 0; c < row.size(); ++c) widths[c] = std::max(widths[c], row[c].size());
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line.append(widths[c] - row[c].size() + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

std::string slowest_line(const RankReport& report) {
  if (report.slowest_counts.empty()) return {};
  std::vector<std::pair<int, std::string>> counts;
  int compared = 0;
  for (const auto& [label, n] : report.slowest_counts) {
    counts.emplace_back(n, label);
    compared += n;
  }
  std::sort(counts.begin(), counts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string line = "Slowest rank: " + counts[0].second + " in " + std::to_string(counts[0].first) + " of " +
                     std::to_string(compared) + " steps";
  for (std::size_t i = 1; i < counts.size(); ++i) line += "; " + counts[i].second + " in " + std::to_string(counts[i].first);
  return line + "\n";
}

std::string table(const RankReport& report) {
  std::string out = "Ranks (" + std::to_string(report.ranks.size()) +
                    " traces; % of step time, or of the whole trace where it has no steps)\n" + aligned(rank_rows(report));
  if (!report.steps.empty()) {
    out += std::string("\nSteps across ranks (matched by ") + (report.matched_by_name ? "name" : "order") + ")\n";
    out += aligned(step_rows(report));
    out += slowest_line(report);
  }
  if (!report.communicators.empty()) {
    out += std::string("\nCollectives across ranks (paired by ") + to_string(report.collective_pairing) +
           "; wait: longest minus shortest kernel of a collective, the time its first rank waited for its last)\n";
    out += aligned(communicator_rows(report));
  }
  if (!report.clocks.one_host) {
    out += "\nClocks (the ranks are on more than one host: each aligned to rank " + std::to_string(report.clocks.reference_rank) +
           " on the ends of paired collectives; offset: added to the rank's times to put them on rank " +
           std::to_string(report.clocks.reference_rank) +
           "'s clock, the median of the differences; error: their median absolute deviation, widened to the offsets "
           "under which the paired collectives overlap in time; a rank on rank " +
           std::to_string(report.clocks.reference_rank) + "'s host shares its clock)\n";
    out += aligned(clock_rows(report));
  }
  for (const std::string& note : report.notes) out += "note: " + note + "\n";
  return out;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + '"';
}

std::string csv(const RankReport& report) {
  std::string out;
  for (const auto& [section, rows] : {std::pair{"rank", rank_rows(report)}, std::pair{"step", step_rows(report)},
                                      std::pair{"communicator", communicator_rows(report)},
                                      std::pair{"clock", report.clocks.one_host ? Rows{} : clock_rows(report)}}) {
    for (std::size_t i = 0; i < rows.size(); ++i) {
      out += i == 0 ? "section" : section;
      for (const std::string& field : rows[i]) out += "," + csv_field(field);
      out += '\n';
    }
  }
  return out;
}

void json_times(std::string& out, const StepTimes& t) {
  out += "\"compute_ns\":" + std::to_string(t.compute_ns) + ",\"communication_ns\":" + std::to_string(t.communication_ns) +
         ",\"exposed_communication_ns\":" + std::to_string(t.exposed_communication_ns) +
         ",\"copy_ns\":" + std::to_string(t.copy_ns) + ",\"idle_ns\":" + std::to_string(t.idle_ns);
}

std::string json(const RankReport& report) {
  std::string out = "{\"ranks\":[";
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    const RankRow& r = report.ranks[i];
    out += i == 0 ? "\n{" : ",\n{";
    out += "\"rank\":" + std::to_string(r.rank) + ",\"host\":";
    util::append_json_string(out, r.host);
    out += ",\"file\":";
    util::append_json_string(out, r.file);
    out += ",\"steps\":" + std::to_string(r.steps) + ",\"step_mean_ns\":" + std::to_string(r.step_mean_ns) +
           ",\"step_max_ns\":" + std::to_string(r.step_max_ns) + ",\"time_ns\":" + std::to_string(r.sum.end_ns) + ",";
    json_times(out, r.sum);
    out += '}';
  }
  out += std::string("],\"steps_matched_by\":\"") + (report.matched_by_name ? "name" : "order") + "\",\"steps\":[";
  for (std::size_t i = 0; i < report.steps.size(); ++i) {
    const StepRow& s = report.steps[i];
    out += i == 0 ? "\n{\"step\":" : ",\n{\"step\":";
    util::append_json_string(out, s.step);
    out += ",\"ranks\":" + std::to_string(s.ranks) + ",\"fastest_rank\":";
    util::append_json_string(out, s.fastest);
    out += ",\"fastest_ns\":" + std::to_string(s.fastest_ns) + ",\"median_ns\":" + std::to_string(s.median_ns) +
           ",\"slowest_rank\":";
    util::append_json_string(out, s.slowest);
    out += ",\"slowest_ns\":" + std::to_string(s.slowest_ns) + ",\"slowest_over_median_ns\":" +
           std::to_string(s.over_median_ns()) + ",\"slowest_over_fastest_ns\":" + std::to_string(s.over_fastest_ns()) +
           ",\"most_exposed_communication_rank\":";
    util::append_json_string(out, s.most_exposed);
    out += ",\"most_exposed_communication_ns\":" + std::to_string(s.most_exposed_ns) + "}";
  }
  out += "],\"slowest_counts\":{";
  bool first = true;
  for (const auto& [label, n] : report.slowest_counts) {
    if (!first) out += ',';
    first = false;
    util::append_json_string(out, label);
    out += ":" + std::to_string(n);
  }
  out += "},\"collectives_paired_by\":";
  util::append_json_string(out, to_string(report.collective_pairing));
  out += ",\"communicators\":[";
  for (std::size_t i = 0; i < report.communicators.size(); ++i) {
    const CommunicatorRow& c = report.communicators[i];
    out += i == 0 ? "\n{\"communicator\":" : ",\n{\"communicator\":";
    util::append_json_string(out, c.communicator);
    for (const auto& [key, value] : {std::pair{"description", &c.description}, std::pair{"members", &c.members},
                                     std::pair{"ranks", &c.ranks}, std::pair{"last_to_arrive", &c.last_to_arrive}}) {
      out += std::string(",\"") + key + "\":";
      util::append_json_string(out, *value);
    }
    out += ",\"collectives\":" + std::to_string(c.collectives) + ",\"partial\":" + std::to_string(c.partial) +
           ",\"median_ns\":" + std::to_string(c.median_ns) + ",\"wait_median_ns\":" + std::to_string(c.wait_median_ns) +
           ",\"wait_max_ns\":" + std::to_string(c.wait_max_ns) +
           ",\"last_to_arrive_count\":" + std::to_string(c.last_to_arrive_count) + "}";
  }
  out += "],\"clocks\":{\"one_host\":";
  out += report.clocks.one_host ? "true" : "false";
  out += ",\"reference_rank\":" + std::to_string(report.clocks.reference_rank) + ",\"paired_by\":";
  util::append_json_string(out, to_string(report.clocks.pairing));
  out += ",\"ranks\":[";
  for (std::size_t i = 0; i < report.clocks.ranks.size(); ++i) {
    const RankClock& c = report.clocks.ranks[i];
    const ClockAlignment& a = c.alignment;
    out += i == 0 ? "\n{\"rank\":" : ",\n{\"rank\":";
    out += std::to_string(c.rank) + ",\"host\":";
    util::append_json_string(out, c.host);
    out += ",\"clock\":";
    util::append_json_string(out, to_string(c.clock));
    out += ",\"offset_ns\":" + std::to_string(a.offset_ns) + ",\"error_ns\":" + std::to_string(a.error_ns) +
           ",\"spread_ns\":" + std::to_string(a.spread_ns) + ",\"collectives\":" + std::to_string(a.collectives) +
           ",\"paired_by\":";
    util::append_json_string(out, c.clock == RankClock::Clock::aligned ? to_string(a.pairing) : "");
    out += ",\"via_rank\":" + std::to_string(a.via_rank) + ",\"counts_differ\":" + (a.counts_differ ? "true" : "false") +
           ",\"own_collectives\":" + std::to_string(c.own_collectives) + ",\"why\":";
    util::append_json_string(out, clock_why(c));
    out += "}";
  }
  out += "]},\"notes\":[";
  for (std::size_t i = 0; i < report.notes.size(); ++i) {
    if (i > 0) out += ',';
    util::append_json_string(out, report.notes[i]);
  }
  return out + "]}\n";
}

}  // namespace

std::string format_rank_report(const RankReport& report, StatsFormat format) {
  switch (format) {
    case StatsFormat::csv: return csv(report);
    case StatsFormat::json: return json(report);
    case StatsFormat::table: break;
  }
  return table(report);
}

}  // namespace cudascope::analysis
