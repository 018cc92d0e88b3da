#include "trace_parser.h"

#include <simdjson.h>

#include <charconv>

namespace cudascope::analysis::detail {
namespace {

constexpr std::size_t kMaxProblems = 200;
constexpr std::uint64_t kProgressEvery = 1 << 16;

bool is_number_start(int c) { return c == '-' || (c >= '0' && c <= '9'); }

// A "pid" or "tid" string that is how a number is written ("1", "-3"; not "07", "+1", "Spans")
// becomes that number: Chrome's trace viewer keys processes and threads by the text of their
// id, so a writer's "1" and 1 are one process there. False (and `id` as it was) otherwise.
bool read_as_number(TraceIdValue& id) {
  const std::string_view text = id.text;
  const std::string_view digits = text.substr(text.starts_with('-') ? 1 : 0);
  if (!id.is_text || digits.empty() || (digits[0] == '0' && text != "0")) return false;
  std::int64_t number = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (error != std::errc() || end != text.data() + text.size()) return false;
  id = TraceIdValue{number, {}, false};
  return true;
}

// The event members the model keeps, told apart by length first: this runs for every key.
enum class Field : std::uint8_t { other, ph, name, cat, bp, scope, pid, tid, ts, dur, id, args };

Field field_of(const std::string& key) {
  switch (key.size()) {
    case 1: return key[0] == 's' ? Field::scope : Field::other;
    case 2:
      if (key == "ph") return Field::ph;
      if (key == "ts") return Field::ts;
      if (key == "id") return Field::id;
      if (key == "bp") return Field::bp;
      return Field::other;
    case 3:
      if (key == "cat") return Field::cat;
      if (key == "pid") return Field::pid;
      if (key == "tid") return Field::tid;
      if (key == "dur") return Field::dur;
      return Field::other;
    case 4:
      if (key == "name") return Field::name;
      if (key == "args") return Field::args;
      return Field::other;
    default: return Field::other;
  }
}

}  // namespace

TraceParser::TraceParser(util::ByteReader& reader, TraceModelBuilder& builder, TraceHeader& header, std::uint64_t base_offset,
                         std::function<bool(double)> progress)
    : reader_(reader), cursor_(reader), builder_(builder), header_(header), base_(base_offset), progress_(std::move(progress)) {
  resume_offset_ = base_offset;
}

JsonStatus TraceParser::syntax() {
  error_ = "byte " + std::to_string(base_ + cursor_.error_offset()) + ": " + cursor_.message();
  return JsonStatus::syntax;
}

void TraceParser::problem(const std::string& what) { report("event " + std::to_string(header_.events_seen) + ": " + what); }

void TraceParser::report(std::string line) {
  TraceModel& model = builder_.model();
  auto& problems = model.format_problems;
  ++model.format_problem_count;
  if (problems.size() < kMaxProblems) problems.push_back(std::move(line));
  else if (problems.size() == kMaxProblems) problems.emplace_back();  // how many more: finish_model
}

// Past the listed ones, the line goes before the empty one that will say how many more there
// are; nothing is reported after it, the reading having ended.
void TraceParser::report_listed(std::string line) {
  TraceModel& model = builder_.model();
  auto& problems = model.format_problems;
  ++model.format_problem_count;
  const bool capped = problems.size() > kMaxProblems;
  problems.insert(capped ? problems.end() - 1 : problems.end(), std::move(line));
}

JsonStatus TraceParser::run(TracePhase phase) {
  phase_ = phase;
  JsonStatus s = JsonStatus::ok;
  switch (phase) {
    case TracePhase::start: s = root(); break;
    case TracePhase::first_event:
    case TracePhase::next_event:
      s = events_array(phase);
      if (s == JsonStatus::ok && !header_.array_form) s = root_members(false);
      break;
    case TracePhase::after_events: s = root_members(false); break;
    case TracePhase::done: return JsonStatus::ok;
  }
  // Damage in the root's members after a whole events array (a writer's metadata, not
  // escaped) costs only what follows it: the events are kept and it is a format problem.
  // Text after the root's end (below) is not this trace's, another document or junk: refused.
  if (s == JsonStatus::syntax && phase_ == TracePhase::after_events) s = read_past_damage();
  if (s == JsonStatus::ok) {
    phase_ = TracePhase::done;
    resume_offset_ = base_ + cursor_.offset();
    // Only whitespace may follow the trace.
    if (cursor_.peek_token() >= 0) {
      cursor_.fail("unexpected text after the end of the trace");
      return syntax();
    }
    if (!cursor_.input_error().empty()) {
      error_ = cursor_.input_error();
      return JsonStatus::end;
    }
  }
  if (s == JsonStatus::syntax && error_.empty()) return syntax();
  return s;
}

// Reports the damage the cursor stopped at and reads the rest of the input unparsed, so that
// the input's own end (gzip's trailer) is still checked.
JsonStatus TraceParser::read_past_damage() {
  report_listed("byte " + std::to_string(base_ + cursor_.error_offset()) + ": " + cursor_.message() +
         " (after the events array: its events are read, the rest of the file is not)");
  error_.clear();
  cursor_.skip_to_end();
  return JsonStatus::ok;
}

JsonStatus TraceParser::root() {
  cursor_.skip_byte_order_mark();
  const int c = cursor_.peek_token();
  if (c < 0) return JsonStatus::end;
  if (c == '[') {
    header_.array_form = true;
    header_.saw_events = true;
    cursor_.advance();
    phase_ = TracePhase::first_event;
    resume_offset_ = base_ + cursor_.offset();
    return events_array(TracePhase::first_event);
  }
  if (c != '{') {
    cursor_.fail("expected '{' or '[' (a JSON trace: an object with \"traceEvents\", or an array of events)");
    return syntax();
  }
  cursor_.advance();
  return root_members(true);
}

// Members of the root object, up to and including its '}'. `first`: just after the '{'.
JsonStatus TraceParser::root_members(bool first) {
  for (;;) {
    int c = cursor_.peek_token();
    if (c < 0) return JsonStatus::end;
    if (c == '}') {
      cursor_.advance();
      if (!header_.saw_events) {
        cursor_.fail("the object has no \"traceEvents\" array (not a trace)");
        return syntax();
      }
      return JsonStatus::ok;
    }
    if (!first) {
      if (c != ',') {
        cursor_.fail("expected ',' or '}' after a member of the trace object");
        return syntax();
      }
      cursor_.advance();
    }
    first = false;
    if (JsonStatus s = cursor_.read_string(key_); s != JsonStatus::ok) return s;
    if (JsonStatus s = cursor_.expect(':', "':' after a member name"); s != JsonStatus::ok) return s;
    if (key_ == "traceEvents") {
      c = cursor_.peek_token();
      if (c < 0) return JsonStatus::end;
      if (c != '[') {
        cursor_.fail("\"traceEvents\" is not an array");
        return syntax();
      }
      cursor_.advance();
      header_.saw_events = true;
      phase_ = TracePhase::first_event;
      resume_offset_ = base_ + cursor_.offset();
      if (JsonStatus s = events_array(TracePhase::first_event); s != JsonStatus::ok) return s;
    } else if (JsonStatus s = header_member(key_); s != JsonStatus::ok) {
      return s;
    }
    if (header_.saw_events) {
      phase_ = TracePhase::after_events;
      resume_offset_ = base_ + cursor_.offset();
    }
  }
}

JsonStatus TraceParser::header_member(const std::string& key) {
  static constexpr std::string_view kKinetoKeys[] = {"schemaVersion", "deviceProperties", "baseTimeNanoseconds", "trace_id",
                                                     "cupti_version", "distributedInfo", "cuda_runtime_version"};
  for (std::string_view k : kKinetoKeys) header_.kineto |= key == k;
  const bool kept = key == "deviceProperties" || key == "distributedInfo" || key == "cudascope" || key == "cudascopeSummary" ||
                    key == "baseTimeNanoseconds";
  if (!kept) return cursor_.skip_value();
  scratch_.clear();
  if (JsonStatus s = cursor_.capture_value(scratch_); s != JsonStatus::ok) return s;
  // Header members are small: a DOM is the simplest way to read them.
  simdjson::dom::parser parser;
  simdjson::dom::element value;
  if (parser.parse(scratch_).get(value)) return JsonStatus::ok;
  TraceModel& model = builder_.model();
  std::int64_t number = 0;
  std::string_view text;
  if (key == "deviceProperties") {
    simdjson::dom::array devices;
    if (value.get_array().get(devices)) return JsonStatus::ok;
    for (simdjson::dom::element d : devices) {
      TraceDevice device;
      if (!d["id"].get_int64().get(number)) device.id = static_cast<int>(number);
      if (!d["name"].get_string().get(text)) device.name = text;
      if (!d["totalGlobalMem"].get_int64().get(number)) device.total_memory = number;
      model.devices.push_back(device);
    }
  } else if (key == "distributedInfo") {
    if (!value["rank"].get_int64().get(number)) model.rank = static_cast<int>(number);
    if (!value["world_size"].get_int64().get(number)) model.world_size = static_cast<int>(number);
    if (!value["local_rank"].get_int64().get(number)) model.local_rank = static_cast<int>(number);
    if (!value["host"].get_string().get(text)) model.host = text;
    if (!value["backend"].get_string().get(text)) model.distributed_backend = text;
  } else if (key == "cudascope") {
    header_.cudascope = true;
    if (!value["source"].get_string().get(text)) model.source = text;
  } else if (key == "cudascopeSummary") {
    header_.cudascope = true;
    bool complete = false;
    header_.has_summary = true;
    if (!value["complete"].get_bool().get(complete)) header_.summary_complete = complete;
    if (!value["dropped"]["buffer"].get_int64().get(number)) header_.summary_dropped_buffer = number;
    if (!value["dropped"]["cupti"].get_int64().get(number)) header_.summary_dropped_cupti = number;
  } else if (key == "baseTimeNanoseconds") {
    if (!value.get_int64().get(number)) model.base_time_ns = number;
  }
  return JsonStatus::ok;
}

// The events array after its '[' (first_event) or after an element (next_event), through its ']'.
JsonStatus TraceParser::events_array(TracePhase phase) {
  bool first = phase == TracePhase::first_event;
  for (;;) {
    const int c = cursor_.peek_token();
    if (c < 0) return JsonStatus::end;
    if (c == ']') {
      cursor_.advance();
      phase_ = TracePhase::after_events;
      resume_offset_ = base_ + cursor_.offset();
      return JsonStatus::ok;
    }
    if (!first) {
      if (c != ',') {
        cursor_.fail("expected ',' or ']' after event " + std::to_string(header_.events_seen - 1));
        return syntax();
      }
      cursor_.advance();
      // A writer that ends every event with ',' (a ']' appended later) leaves ",]": Perfetto
      // reads it, JSON does not allow it; read, and reported.
      if (cursor_.peek_token() == ']') {
        problem("a ',' after the last event, before the events array's ']'");
        continue;
      }
    }
    first = false;
    if (JsonStatus s = event(); s != JsonStatus::ok) return s;
    ++header_.events_seen;
    ++events_;
    phase_ = TracePhase::next_event;
    resume_offset_ = base_ + cursor_.offset();
    if (progress_ && events_ % kProgressEvery == 0 && !progress_(reader_.source().progress())) {
      error_ = "cancelled";
      return JsonStatus::syntax;
    }
  }
}

JsonStatus TraceParser::id_value(TraceIdValue& value, std::string& text, const char* field) {
  const int c = cursor_.peek_token();
  if (c < 0) return JsonStatus::end;
  value = TraceIdValue{};
  if (c == '"') {
    if (JsonStatus s = cursor_.read_string(text); s != JsonStatus::ok) return s;
    value.is_text = true;
    value.text = text;
    return JsonStatus::ok;
  }
  if (is_number_start(c)) {
    if (JsonStatus s = cursor_.read_number_text(number_); s != JsonStatus::ok) return s;
    if (parse_integer(number_, value.number)) return JsonStatus::ok;
  } else if (JsonStatus s = cursor_.skip_value(); s != JsonStatus::ok) {
    return s;
  }
  problem(std::string("\"") + field + "\" is not an integer or a string");
  return JsonStatus::ok;
}

JsonStatus TraceParser::time_value(std::int64_t& ns, bool& has, const char* field) {
  const int c = cursor_.peek_token();
  if (c < 0) return JsonStatus::end;
  if (is_number_start(c)) {
    if (JsonStatus s = cursor_.read_number_text(number_); s != JsonStatus::ok) return s;
    has = parse_microseconds_as_ns(number_, ns);
    if (!has) problem(std::string("\"") + field + "\" is out of range");
  } else if (c == '"') {
    // Chrome's trace viewer (JavaScript arithmetic) and Perfetto (CoerceToNs) read a number
    // written as a string as that number: so does this, and --check still reports it.
    if (JsonStatus s = cursor_.read_string(number_); s != JsonStatus::ok) return s;
    has = !number_.empty() && (is_number_start(static_cast<unsigned char>(number_[0]))) && parse_microseconds_as_ns(number_, ns);
    problem(std::string("\"") + field + "\" is " + (has ? "a string, read as the number it holds" : "not a number"));
  } else {
    if (JsonStatus s = cursor_.skip_value(); s != JsonStatus::ok) return s;
    problem(std::string("\"") + field + "\" is not a number");
  }
  if (!has) reported_time_ = true;
  return JsonStatus::ok;
}

JsonStatus TraceParser::event() {
  int c = cursor_.peek_token();
  if (c < 0) return JsonStatus::end;
  if (c != '{') {
    if (JsonStatus s = cursor_.skip_value(); s != JsonStatus::ok) return s;
    problem("not an object");
    return JsonStatus::ok;
  }
  cursor_.advance();
  EventDraft& d = draft_;
  d = EventDraft{};
  reported_time_ = false;
  bool has_ph = false;
  bool ph_ok = true;
  c = cursor_.peek_token();
  if (c < 0) return JsonStatus::end;
  if (c == '}') {
    cursor_.advance();
  } else {
    for (;;) {
      c = cursor_.peek_token();
      if (c < 0) return JsonStatus::end;
      if (c != '"') {
        cursor_.fail("expected a member name in event " + std::to_string(header_.events_seen));
        return JsonStatus::syntax;
      }
      if (JsonStatus s = cursor_.read_string(key_); s != JsonStatus::ok) return s;
      if (JsonStatus s = cursor_.expect(':', "':' after a member name"); s != JsonStatus::ok) return s;
      JsonStatus s = JsonStatus::ok;
      const std::string& k = key_;
      const Field field = field_of(k);
      c = cursor_.peek_token();
      if (c < 0) return JsonStatus::end;
      if (field == Field::ph || field == Field::name || field == Field::cat || field == Field::bp || field == Field::scope) {
        std::string& out = field == Field::ph ? ph_ : field == Field::name ? name_ : field == Field::cat ? cat_ : scratch_;
        if (c == '"') {
          s = cursor_.read_string(out);
          if (s == JsonStatus::ok) {
            if (field == Field::ph) {
              has_ph = true;
              ph_ok = ph_.size() == 1;
              d.ph = ph_.empty() ? '?' : ph_[0];
            } else if (field == Field::name) {
              d.has_name = true;
              d.name = name_;
            } else if (field == Field::cat) {
              d.has_cat = true;
              d.cat = cat_;
            } else if (field == Field::bp) {
              if (out == "e") d.flags |= TraceModel::kFlagBindEnclosing;
            } else if (out == "g") {
              d.flags |= TraceModel::kFlagGlobalScope;
            } else if (out == "p") {
              d.flags |= TraceModel::kFlagProcessScope;
            }
          }
        } else {
          s = cursor_.skip_value();
          if (field == Field::ph || field == Field::name || field == Field::cat) problem("\"" + k + "\" is not a string");
        }
      } else if (field == Field::pid) {
        d.has_pid = true;
        s = id_value(d.pid, pid_text_, "pid");
        if (read_as_number(d.pid)) d.flags |= TraceModel::kFlagPidWasText;
      } else if (field == Field::tid) {
        d.has_tid = true;
        s = id_value(d.tid, tid_text_, "tid");
        if (read_as_number(d.tid)) d.flags |= TraceModel::kFlagTidWasText;
      } else if (field == Field::ts) {
        s = time_value(d.ts_ns, d.has_ts, "ts");
      } else if (field == Field::dur) {
        s = time_value(d.dur_ns, d.has_dur, "dur");
      } else if (field == Field::id) {
        TraceIdValue id;
        s = id_value(id, id_text_, "id");
        if (s == JsonStatus::ok) {
          d.has_id = true;
          d.id_is_text = id.is_text;
          d.id_text = id.text;
          d.id = static_cast<std::uint64_t>(id.number);
        }
      } else if (field == Field::args) {
        args_.clear();
        s = cursor_.capture_value(args_);
        if (s == JsonStatus::ok) {
          if (args_.empty() || args_[0] != '{') problem("\"args\" is not an object");
          else {
            d.has_args = true;
            d.args = args_;
          }
        }
      } else {
        s = cursor_.skip_value();
      }
      if (s != JsonStatus::ok) return s;
      c = cursor_.peek_token();
      if (c < 0) return JsonStatus::end;
      cursor_.advance();
      if (c == '}') break;
      if (c != ',') {
        cursor_.fail("expected ',' or '}' in event " + std::to_string(header_.events_seen));
        return JsonStatus::syntax;
      }
    }
  }
  // The whole event is read: check the fields the format requires, then keep it.
  if (!has_ph || !ph_ok) {
    problem(has_ph ? "\"ph\" is not one letter" : "no \"ph\"");
    return JsonStatus::ok;
  }
  const std::string ph(1, d.ph);
  if (!d.has_pid) problem("(" + ph + "): no \"pid\"");
  if (!d.has_tid && d.ph != 'M' && d.ph != 'C') problem("(" + ph + "): no \"tid\"");
  if (!reported_time_) {
    if (!d.has_ts && d.ph != 'M') problem("(" + ph + "): \"ts\" missing or not a number");
    if (d.ph == 'X' && !d.has_dur) problem("(X): \"dur\" missing or not a number");
  }
  if (d.has_dur && d.dur_ns < 0) {
    problem("negative \"dur\"");
    d.dur_ns = 0;
  }
  // Every reader takes ts + dur for the slice's end: one past the clock's range would wrap.
  if (d.has_dur && d.has_ts && d.ts_ns > 0 && d.dur_ns > INT64_MAX - d.ts_ns) {
    problem("\"ts\" + \"dur\" is out of range");
    d.dur_ns = INT64_MAX - d.ts_ns;
  }
  if (d.ph == 'X' && !d.has_dur) {
    d.has_dur = true;
    d.dur_ns = 0;
  }
  if (d.ph == 'C' && d.has_args) {
    // Counter values must be numbers (Perfetto drops the others).
    static thread_local simdjson::dom::parser parser;
    simdjson::dom::object counters;
    if (!parser.parse(args_).get_object().get(counters)) {
      for (auto [key, value] : counters) {
        if (!value.is_number()) problem("(C): counter \"" + std::string(key) + "\" is not a number");
      }
    }
  }
  builder_.add(d);
  return JsonStatus::ok;
}

}  // namespace cudascope::analysis::detail
