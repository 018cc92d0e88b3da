// A rank summary as JSON, and back. Written without a DOM (util::append_json_string escapes
// as every cudascope writer does); read with simdjson, as the trace header is.
#include <cudascope/analysis/rank_summary.h>
#include <cudascope/util/byte_source.h>
#include <cudascope/util/input_budget.h>
#include <cudascope/util/json_escape.h>
#include <cudascope/util/output_file.h>

#include <simdjson.h>

#include <memory>
#include <stdexcept>

namespace cudascope::analysis {
namespace {

constexpr std::string_view kFirstMember = "{\"cudascopeRankSummary\":";

void member(std::string& out, const char* key, std::int64_t value) {
  out += ",\"";
  out += key;
  out += "\":";
  out += std::to_string(value);
}

void member(std::string& out, const char* key, const std::string& value) {
  out += ",\"";
  out += key;
  out += "\":";
  util::append_json_string(out, value);
}

void times_json(std::string& out, const StepTimes& t) {
  out += "{\"name\":";
  util::append_json_string(out, t.name);
  member(out, "start_ns", t.start_ns);
  member(out, "end_ns", t.end_ns);
  member(out, "compute_ns", t.compute_ns);
  member(out, "communication_ns", t.communication_ns);
  member(out, "exposed_communication_ns", t.exposed_communication_ns);
  member(out, "copy_ns", t.copy_ns);
  member(out, "idle_ns", t.idle_ns);
  out += '}';
}

void numbers_json(std::string& out, const char* key, const std::vector<std::int64_t>& values) {
  out += ",\"";
  out += key;
  out += "\":[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i == 0 ? "" : ",") + std::to_string(values[i]);
  out += ']';
}

// Columns rather than an object a collective: a summary of thousands of collectives stays small.
void communicator_json(std::string& out, const CommunicatorCollectives& c) {
  out += "{\"name\":";
  util::append_json_string(out, c.name);
  member(out, "description", c.description);
  member(out, "members", c.members);
  out += std::string(",\"has_sequence\":") + (c.has_sequence ? "true" : "false");
  if (c.nccl_communicator) out += ",\"nccl_communicator\":true";  // absent: a process group's
  numbers_json(out, "seq", c.seq);
  numbers_json(out, "start_ns", c.start_ns);
  numbers_json(out, "end_ns", c.end_ns);
  out += '}';
}

// Reads one member; a missing one keeps the default, a mistyped one is an error.
class Reader {
 public:
  explicit Reader(std::string& error) : error_(error) {}
  // A summary's integers lie in [min, max]: a count or a duration in ns is never negative, a
  // time on the trace's clock may be (a Chrome trace's ts may), and 2^62 ns (146 years) in
  // size bounds either, so the merge's sums and differences cannot overflow; a rank is -1
  // (none) or below 2^24. An edited or corrupted file is refused, naming the key.
  static constexpr std::int64_t kMaxNs = std::int64_t{1} << 62;
  static constexpr std::int64_t kMaxRank = std::int64_t{1} << 24;
  void integer(simdjson::dom::object o, const char* key, std::int64_t& out, const std::string& where,
               std::int64_t min = 0, std::int64_t max = kMaxNs) {
    simdjson::dom::element value;
    if (o[key].get(value)) return;
    if (value.get_int64().get(out)) return fail(where + "\"" + key + "\" is not an integer");
    if (out < min || out > max) {
      fail(where + "\"" + key + "\" is " + std::to_string(out) + ", outside " + std::to_string(min) + " to " +
           std::to_string(max));
    }
  }
  void rank_field(simdjson::dom::object o, const char* key, int& out, const std::string& where) {
    std::int64_t wide = out;
    integer(o, key, wide, where, -1, kMaxRank);
    out = static_cast<int>(wide);
  }
  void text(simdjson::dom::object o, const char* key, std::string& out, const std::string& where) {
    simdjson::dom::element value;
    if (o[key].get(value)) return;
    std::string_view view;
    if (value.get_string().get(view)) fail(where + "\"" + key + "\" is not a string");
    else out = view;
  }
  void times(simdjson::dom::element e, StepTimes& t, const std::string& where) {
    simdjson::dom::object o;
    if (e.get_object().get(o)) return fail(where + "is not an object");
    text(o, "name", t.name, where);
    integer(o, "start_ns", t.start_ns, where, -kMaxNs);
    integer(o, "end_ns", t.end_ns, where, -kMaxNs);
    integer(o, "compute_ns", t.compute_ns, where);
    integer(o, "communication_ns", t.communication_ns, where);
    integer(o, "exposed_communication_ns", t.exposed_communication_ns, where);
    integer(o, "copy_ns", t.copy_ns, where);
    integer(o, "idle_ns", t.idle_ns, where);
    if (t.end_ns < t.start_ns) fail(where + "\"end_ns\" is before \"start_ns\"");
  }
  void numbers(simdjson::dom::object o, const char* key, std::vector<std::int64_t>& out, const std::string& where,
               std::int64_t min = 0, std::int64_t max = kMaxNs) {
    simdjson::dom::array array;
    if (o[key].get_array().get(array)) return;
    for (simdjson::dom::element e : array) {
      std::int64_t value = 0;
      if (e.get_int64().get(value)) return fail(where + "\"" + key + "\" holds a non-integer");
      if (value < min || value > max) {
        return fail(where + "\"" + key + "\" holds " + std::to_string(value) + ", outside " + std::to_string(min) + " to " +
                    std::to_string(max));
      }
      out.push_back(value);
    }
  }
  void communicator(simdjson::dom::element e, CommunicatorCollectives& c, const std::string& where) {
    simdjson::dom::object o;
    if (e.get_object().get(o)) return fail(where + "is not an object");
    text(o, "name", c.name, where);
    text(o, "description", c.description, where);
    text(o, "members", c.members, where);
    bool has_sequence = true;
    if (!o["has_sequence"].get_bool().get(has_sequence)) c.has_sequence = has_sequence;
    bool nccl_communicator = false;
    if (!o["nccl_communicator"].get_bool().get(nccl_communicator)) c.nccl_communicator = nccl_communicator;
    numbers(o, "seq", c.seq, where, INT64_MIN, INT64_MAX);  // a trace's own numbers, -1 for none
    numbers(o, "start_ns", c.start_ns, where, -kMaxNs);
    numbers(o, "end_ns", c.end_ns, where, -kMaxNs);
    if (c.seq.size() != c.start_ns.size() || c.end_ns.size() != c.start_ns.size())
      fail(where + "\"seq\", \"start_ns\" and \"end_ns\" differ in length");
  }
  void fail(const std::string& what) {
    if (error_.empty()) error_ = what;
  }

 private:
  std::string& error_;
};

}  // namespace

std::string rank_summary_json(const RankSummary& s) {
  std::string out(kFirstMember);
  out += std::to_string(RankSummary::kVersion);
  member(out, "file", s.file);
  member(out, "format", s.format);
  member(out, "rank", s.rank);
  member(out, "local_rank", s.local_rank);
  member(out, "world_size", s.world_size);
  member(out, "host", s.host);
  member(out, "backend", s.backend);
  out += ",\"devices\":[";
  for (std::size_t i = 0; i < s.devices.size(); ++i) out += (i == 0 ? "" : ",") + std::to_string(s.devices[i]);
  out += ']';
  member(out, "step_rule", s.step_rule);
  member(out, "kernels", s.kernels);
  member(out, "communication_kernels", s.communication_kernels);
  out += ",\"total\":";
  times_json(out, s.total);
  out += ",\"steps\":[";
  for (std::size_t i = 0; i < s.steps.size(); ++i) {
    out += i == 0 ? "\n" : ",\n";
    times_json(out, s.steps[i]);
  }
  out += "],\"communicators\":[";
  for (std::size_t i = 0; i < s.communicators.size(); ++i) {
    out += i == 0 ? "\n" : ",\n";
    communicator_json(out, s.communicators[i]);
  }
  out += "]}\n";
  return out;
}

RankSummaryReadResult parse_rank_summary(const std::string& text, const std::string& origin) {
  RankSummaryReadResult result;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto error = parser.parse(text).get(root); error) {
    result.error = origin + ": not JSON: " + simdjson::error_message(error);
    return result;
  }
  simdjson::dom::object o;
  std::int64_t version = 0;
  if (root.get_object().get(o) || o["cudascopeRankSummary"].get_int64().get(version)) {
    result.error = origin + ": not a rank summary (no \"cudascopeRankSummary\" version; write one with "
                            "cudascope stats --summary-out)";
    return result;
  }
  if (version != RankSummary::kVersion) {
    result.error = origin + ": rank summary version " + std::to_string(version) + ", this cudascope reads version " +
                   std::to_string(RankSummary::kVersion);
    return result;
  }
  RankSummary& s = result.summary;
  Reader read(result.error);
  const std::string where = origin + ": ";
  read.text(o, "file", s.file, where);
  read.text(o, "format", s.format, where);
  read.rank_field(o, "rank", s.rank, where);
  read.rank_field(o, "local_rank", s.local_rank, where);
  read.rank_field(o, "world_size", s.world_size, where);
  if (s.world_size == 0) read.fail(where + "\"world_size\" is 0 (-1 when unknown)");
  read.text(o, "host", s.host, where);
  read.text(o, "backend", s.backend, where);
  read.text(o, "step_rule", s.step_rule, where);
  read.integer(o, "kernels", s.kernels, where);
  read.integer(o, "communication_kernels", s.communication_kernels, where);
  simdjson::dom::array array;
  if (!o["devices"].get_array().get(array)) {
    for (simdjson::dom::element d : array) {
      std::int64_t device = 0;
      if (d.get_int64().get(device)) read.fail(where + "\"devices\" holds a non-integer");
      s.devices.push_back(static_cast<int>(device));
    }
  }
  simdjson::dom::element total;
  if (!o["total"].get(total)) read.times(total, s.total, where + "\"total\" ");
  if (!o["steps"].get_array().get(array)) {
    std::size_t index = 0;
    for (simdjson::dom::element step : array) {
      s.steps.emplace_back();
      read.times(step, s.steps.back(), where + "step " + std::to_string(index++) + " ");
    }
  }
  if (!o["communicators"].get_array().get(array)) {
    std::size_t index = 0;
    for (simdjson::dom::element c : array) {
      s.communicators.emplace_back();
      read.communicator(c, s.communicators.back(), where + "communicator " + std::to_string(index++) + " ");
    }
  }
  if (!result.error.empty()) result.summary = {};
  return result;
}

RankSummaryReadResult read_rank_summary(const std::string& path) {
  std::string error;
  const std::string text = util::read_file(path, util::input_budget(), error);
  if (!error.empty()) return {{}, error};
  return parse_rank_summary(text, path);
}

RankSummaryReadResult read_rank_summary(util::PeekedInput& input) {
  std::string error;
  std::uint64_t budget = 0;
  try {
    budget = util::input_budget();
  } catch (const std::exception& e) {
    return {{}, e.what()};
  }
  const std::unique_ptr<util::ByteSource> source = input.take();
  const std::string text = util::read_all(*source, budget, error);
  if (!error.empty()) return {{}, input.path() + ": " + error};
  return parse_rank_summary(text, input.path());
}

bool is_rank_summary_file(const std::string& path) {
  std::string error;
  auto input = util::PeekedInput::open(path, kFirstMember.size() + 64, error);
  return input && is_rank_summary(*input);
}

bool is_rank_summary(util::PeekedInput& input) {
  std::string_view text = input.head(64);
  while (!text.empty() && (text.front() == ' ' || text.front() == '\n' || text.front() == '\r' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  return text.substr(0, kFirstMember.size()) == kFirstMember;
}

std::string rank_summary_path_for_trace(const std::string& trace_path) {
  const std::size_t slash = trace_path.rfind('/');
  const std::size_t name_at = slash == std::string::npos ? 0 : slash + 1;
  std::string name = trace_path.substr(name_at);
  for (std::string_view ending : {std::string_view(".json.gz"), std::string_view(".json")}) {
    if (name.size() > ending.size() && name.compare(name.size() - ending.size(), ending.size(), ending) == 0) {
      name.resize(name.size() - ending.size());
      break;
    }
  }
  return trace_path.substr(0, name_at) + "summary_" + name + ".json";
}

std::string write_rank_summary(const RankSummary& summary, const std::string& path) {
  try {
    util::write_file(path, rank_summary_json(summary));  // whole or not at all
  } catch (const std::exception& e) {
    return e.what();
  }
  return {};
}

}  // namespace cudascope::analysis
