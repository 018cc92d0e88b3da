#include <cudascope/analysis/trace_loader.h>
#include <cudascope/analysis/trace_reader.h>
#include <cudascope/util/byte_source.h>
#include <cudascope/util/input_budget.h>
#include <cudascope/util/output_file.h>

#include "trace_parser.h"

namespace cudascope::analysis {
namespace {

TraceReadResult from_load(TraceLoadResult loaded) {
  TraceReadResult result;
  if (!loaded.ok()) {
    result.error = std::move(loaded.error);
    return result;
  }
  result.trace = expand_trace(std::shared_ptr<const TraceModel>(std::move(loaded.model)));
  return result;
}

}  // namespace

Trace expand_trace(std::shared_ptr<const TraceModel> model) {
  Trace trace;
  const TraceModel& m = *model;
  trace.events.reserve(m.event_count());
  for (std::size_t i = 0; i < m.event_count(); ++i) {
    const TraceModel::Event& e = m.event(i);
    TraceEvent out;
    out.ph = std::string(1, e.ph);
    out.name = m.name(e);
    out.cat = m.cat(e);
    const TraceModel::Track& track = m.tracks()[e.track];
    const TraceModel::Process& process = m.processes()[track.process];
    out.pid = process.pid_text == kNoString ? process.pid : 0;
    out.tid = track.tid_text == kNoString ? track.tid : 0;
    out.ts_ns = e.ts_ns;
    out.dur_ns = e.ph == 'X' ? e.dur_ns : -1;
    out.id = m.id_text(e);
    out.args_json = m.args_json(e);
    if (auto bytes = m.arg_int(e, "bytes")) out.bytes = *bytes;
    trace.events.push_back(std::move(out));
  }
  trace.devices = m.devices;
  trace.complete = m.complete;
  trace.repaired = m.cut_short;
  trace.dropped_buffer = m.dropped_buffer;
  trace.dropped_cupti = m.dropped_cupti;
  trace.rank = m.rank;
  trace.world_size = m.world_size;
  trace.source = m.source;
  trace.format_problems = m.format_problems;
  trace.model = std::move(model);
  return trace;
}

TraceReadResult read_trace(const std::string& path) { return from_load(load_trace(path)); }

TraceReadResult parse_trace(const std::string& text, const std::string& origin) {
  return from_load(load_trace_text(text, origin));
}

std::string repair_trace_file(const std::string& path) {
  const std::uint64_t budget = util::input_budget();
  std::string error;
  auto source = util::open_input(path, budget, error);
  if (!source) return "cannot open trace '" + path + "': " + error;
  // Everything the file holds; a gzip stream without its end yields what it has.
  std::string text;
  char chunk[1 << 16];
  for (std::size_t n; (n = source->read(chunk, sizeof chunk)) > 0;) {
    text.append(chunk, n);
    if (text.size() > budget) return path + ": " + util::budget_exceeded_message(budget);
  }
  auto memory = util::memory_source(text);
  util::ByteReader reader(*memory, budget);
  TraceModel scratch;
  TraceModelBuilder builder(scratch);
  detail::TraceHeader header;
  detail::TraceParser parser(reader, builder, header, 0, {});
  const detail::JsonStatus status = parser.run(detail::TracePhase::start);
  if (status == detail::JsonStatus::ok) return {};
  if (status == detail::JsonStatus::syntax) return path + ": " + parser.error();
  std::string closing;
  switch (parser.phase()) {
    case detail::TracePhase::start: return path + ": the file ends before any \"traceEvents\" array (not a trace)";
    case detail::TracePhase::first_event:
    case detail::TracePhase::next_event:
      closing = header.array_form ? "\n]\n" : "\n],\"cudascopeSummary\":{\"complete\":false,\"truncated\":true}}\n";
      break;
    case detail::TracePhase::after_events:
      closing = header.has_summary ? "}\n" : ",\"cudascopeSummary\":{\"complete\":false,\"truncated\":true}}\n";
      break;
    case detail::TracePhase::done: return {};
  }
  text.resize(parser.resume_offset());
  text += closing;
  try {
    util::OutputFile out(path);
    out.write(text);
    out.close();
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace cudascope::analysis
