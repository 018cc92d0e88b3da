// cudascope's JSON snapshot (PyTorch's schema, tuples as arrays) -> Snapshot, with
// simdjson's on-demand parser: one pass, no DOM, values converted where they are read.

#include "snapshot_builder.h"
#include "snapshot_readers.h"

#include <simdjson.h>

#include <cstdio>
#include <vector>

namespace cudascope::analysis::detail {
namespace {

using simdjson::ondemand::json_type;
using simdjson::ondemand::value;

class JsonDecoder {
 public:
  JsonDecoder(SnapshotBuilder& b, const char* base, size_t length, const LoadOptions& options)
      : b_(b), base_(base), length_(length), options_(options) {}

  bool run(simdjson::ondemand::document& doc);
  LoadError error(const std::string& name) const { return LoadError{name, error_offset_, error_, cancelled_}; }
  uint64_t length() const { return length_; }

 private:
  bool fail(std::string message) {
    if (error_.empty()) {
      error_ = std::move(message);
      error_offset_ = length_;
      if (doc_) {
        const char* loc = nullptr;
        if (doc_->current_location().get(loc) == simdjson::SUCCESS && loc >= base_ && loc <= base_ + length_)
          error_offset_ = static_cast<uint64_t>(loc - base_);
      }
    }
    return false;
  }
  bool json_fail(simdjson::error_code code, const std::string& expected) {
    return fail("expected " + expected + " (" + simdjson::error_message(code) + ")");
  }
  bool get_u64(value v, const char* what, const char* field, uint64_t& out) {
    json_type t;
    if (auto e = v.type().get(t)) return json_fail(e, std::string("a value for ") + what + " field '" + field + "'");
    if (t != json_type::number) return fail(std::string("expected an integer for ") + what + " field '" + field + "'");
    int64_t i;
    if (v.get_int64().get(i) == simdjson::SUCCESS) {
      out = static_cast<uint64_t>(i);
      return true;
    }
    if (auto e = v.get_uint64().get(out)) return json_fail(e, std::string("an integer for ") + what + " field '" + field + "'");
    return true;
  }
  bool get_str(value v, const char* what, const char* field, StringId& out) {
    json_type t;
    if (auto e = v.type().get(t)) return json_fail(e, std::string("a value for ") + what + " field '" + field + "'");
    if (t == json_type::null) return true;
    std::string_view s;
    if (auto e = v.get_string().get(s)) return json_fail(e, std::string("a string for ") + what + " field '" + field + "'");
    out = b_.snapshot().strings.intern(s);
    return true;
  }
  bool tick() {
    if (++ticks_ % 65536 != 0) return true;
    if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) {
      cancelled_ = true;
      return fail("cancelled");
    }
    const char* loc = nullptr;
    if (options_.progress && doc_ && doc_->current_location().get(loc) == simdjson::SUCCESS)
      options_.progress(0.5 + 0.5 * double(loc - base_) / double(length_ ? length_ : 1));
    return true;
  }

  bool stack(value v, const char* what, StackId& out);
  bool block_history(value v, uint64_t* requested_size, StackId* stack);
  bool entry(value v, int device);
  bool block(value v);
  bool segment(value v, SnapshotBuilder::Missing& missing);
  bool settings(value v);
  bool annotations(value v);
  std::string text_of(value v);

  SnapshotBuilder& b_;
  const char* base_;
  size_t length_;
  const LoadOptions& options_;
  simdjson::ondemand::document* doc_ = nullptr;
  std::string error_;
  uint64_t error_offset_ = 0;
  bool cancelled_ = false;
  uint64_t ticks_ = 0;
  std::vector<FrameId> frame_ids_;
 public:
  bool missing_times = false;
};

bool JsonDecoder::stack(value v, const char* what, StackId& out) {
  simdjson::ondemand::array frames;
  json_type t;
  if (auto e = v.type().get(t)) return json_fail(e, "a list of frames");
  if (t == json_type::null) return true;
  if (auto e = v.get_array().get(frames)) return json_fail(e, std::string("a list of frames for a ") + what);
  frame_ids_.clear();
  for (auto item : frames) {
    simdjson::ondemand::object fo;
    if (auto e = item.get_object().get(fo)) return json_fail(e, "each frame to be an object");
    Frame frame;
    for (auto field : fo) {
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return json_fail(e, "a frame field name");
      if (key == "name") {
        if (!get_str(field.value(), "frame", "name", frame.name)) return false;
      } else if (key == "filename") {
        if (!get_str(field.value(), "frame", "filename", frame.filename)) return false;
      } else if (key == "line") {
        uint64_t line = 0;
        if (!get_u64(field.value(), "frame", "line", line)) return false;
        frame.line = static_cast<int32_t>(line);
      }
    }
    frame_ids_.push_back(b_.snapshot().frames.intern(frame));
  }
  out = b_.snapshot().stacks.intern(frame_ids_);
  return true;
}

bool JsonDecoder::entry(value v, int device) {
  if (!tick()) return false;
  simdjson::ondemand::object o;
  if (auto e = v.get_object().get(o)) return json_fail(e, "each trace entry to be an object");
  Snapshot& snap = b_.snapshot();
  TraceEntry entry;
  entry.device = static_cast<int16_t>(device);
  bool have_action = false, have_time = false;
  uint64_t stream = 0, device_free = 0;
  for (auto field : o) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return json_fail(e, "a trace entry field name");
    value val = field.value();
    bool ok = true;
    if (key == "action") {
      std::string_view s;
      if (auto e = val.get_string().get(s)) return json_fail(e, "a string for trace entry field 'action'");
      auto a = parse_action(s);
      if (!a) return fail("expected a trace action (alloc, free_requested, free_completed, segment_alloc, "
                          "segment_free, segment_map, segment_unmap, snapshot, oom, annotate), found '" + std::string(s) + "'");
      entry.action = *a;
      have_action = true;
    } else if (key == "addr") ok = get_u64(val, "trace entry", "addr", entry.addr);
    else if (key == "size") ok = get_u64(val, "trace entry", "size", entry.size);
    else if (key == "stream") ok = get_u64(val, "trace entry", "stream", stream);
    else if (key == "time_us") {
      uint64_t t = 0;
      ok = get_u64(val, "trace entry", "time_us", t);
      entry.time_us = static_cast<int64_t>(t);
      have_time = true;
    } else if (key == "frames") ok = stack(val, "trace entry", entry.stack);
    else if (key == "compile_context") ok = get_str(val, "trace entry", "compile_context", entry.compile_context);
    else if (key == "user_metadata") ok = get_str(val, "trace entry", "user_metadata", entry.user_metadata);
    else if (key == "device_free") ok = get_u64(val, "trace entry", "device_free", device_free);
    if (!ok) return false;
  }
  if (!have_action) return fail("expected an 'action' field in each trace entry");
  if (!have_time) missing_times = true;
  if (entry.action == Action::oom) snap.oom_device_free.emplace_back(b_.entry_count(), device_free);
  entry.stream = b_.stream(stream);
  b_.add_entry(entry);
  return true;
}

bool JsonDecoder::block(value v) {
  simdjson::ondemand::object o;
  if (auto e = v.get_object().get(o)) return json_fail(e, "each block to be an object");
  Block blk;
  blk.address = kUnknownAddress;
  bool have_state = false, have_size = false, have_requested = false, have_frames = false, have_history = false;
  for (auto field : o) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return json_fail(e, "a block field name");
    value val = field.value();
    bool ok = true;
    if (key == "state") {
      std::string_view s;
      if (auto e = val.get_string().get(s)) return json_fail(e, "a string for block field 'state'");
      auto st = parse_block_state(s);
      if (!st) return fail("expected a block state (active_allocated, active_pending_free, inactive), found '" + std::string(s) + "'");
      blk.state = *st;
      have_state = true;
    } else if (key == "size") ok = get_u64(val, "block", "size", blk.size), have_size = true;
    else if (key == "address") ok = get_u64(val, "block", "address", blk.address);
    else if (key == "requested_size") ok = get_u64(val, "block", "requested_size", blk.requested_size), have_requested = true;
    else if (key == "frames") ok = stack(val, "block", blk.stack), have_frames = true;
    else if (key == "history") have_history = true;  // read below, once the block's own fields are known
    if (!ok) return false;
  }
  if (!have_state || !have_size) return fail("expected 'state' and 'size' fields in each block");
  if (!have_requested) blk.requested_size = blk.size;
  if (have_history && (!have_requested || !have_frames)) {
    // The second pass compares raw keys: a key is unescaped only once (simdjson's rule).
    value history;
    if (auto e = o.reset().error()) return json_fail(e, "a block");
    if (auto e = o.find_field_unordered("history").get(history)) return json_fail(e, "a block field 'history'");
    if (!block_history(history, have_requested ? nullptr : &blk.requested_size, have_frames ? nullptr : &blk.stack))
      return false;
  }
  b_.snapshot().blocks.push_back(blk);
  return true;
}

// PyTorch before 2.1 kept a block's requested size (1.13) and stack (1.13, 2.0) only in its
// "history" of allocations, newest first: torch/cuda/_memory_viz.py's _block_extra_legacy
// reads the first entry's "real_size" and "frames", and so does this, for what the block
// lacks (`requested_size`, `stack` not null): the rule of the pickle reader's convert_history.
bool JsonDecoder::block_history(value v, uint64_t* requested_size, StackId* stack_out) {
  simdjson::ondemand::array entries;
  if (auto e = v.get_array().get(entries)) return json_fail(e, "a list for block field 'history'");
  bool newest = true;
  for (auto item : entries) {
    if (!newest) continue;
    newest = false;
    simdjson::ondemand::object o;
    if (auto e = item.get_object().get(o)) return json_fail(e, "each entry of a block's 'history' to be an object");
    bool have_real_size = false;
    for (auto field : o) {
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return json_fail(e, "a block history field name");
      bool ok = true;
      if (key == "real_size" && requested_size != nullptr)
        ok = get_u64(field.value(), "block history", "real_size", *requested_size), have_real_size = true;
      else if (key == "frames" && stack_out != nullptr) ok = stack(field.value(), "block history", *stack_out);
      if (!ok) return false;
    }
    if (requested_size != nullptr && !have_real_size)
      return fail("expected a 'real_size' field in each entry of a block's 'history'");
  }
  return true;
}

bool JsonDecoder::segment(value v, SnapshotBuilder::Missing& missing) {
  simdjson::ondemand::object o;
  if (auto e = v.get_object().get(o)) return json_fail(e, "each segment to be an object");
  Snapshot& snap = b_.snapshot();
  Segment s;
  uint64_t stream = 0, device = 0;
  bool have_address = false, have_total = false, have_blocks = false;
  missing = {true, true, true};
  s.first_block = static_cast<uint32_t>(snap.blocks.size());
  for (auto field : o) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return json_fail(e, "a segment field name");
    value val = field.value();
    bool ok = true;
    if (key == "address") ok = get_u64(val, "segment", "address", s.address), have_address = true;
    else if (key == "total_size") ok = get_u64(val, "segment", "total_size", s.total_size), have_total = true;
    else if (key == "allocated_size") ok = get_u64(val, "segment", "allocated_size", s.allocated_size), missing.allocated = false;
    else if (key == "active_size") ok = get_u64(val, "segment", "active_size", s.active_size), missing.active = false;
    else if (key == "requested_size") ok = get_u64(val, "segment", "requested_size", s.requested_size), missing.requested = false;
    else if (key == "stream") ok = get_u64(val, "segment", "stream", stream);
    else if (key == "device") ok = get_u64(val, "segment", "device", device);
    else if (key == "segment_type") ok = get_str(val, "segment", "segment_type", s.segment_type);
    else if (key == "is_expandable") {
      bool flag = false;
      if (auto e = val.get_bool().get(flag)) return json_fail(e, "a bool for segment field 'is_expandable'");
      s.is_expandable = flag;
    } else if (key == "segment_pool_id") {
      simdjson::ondemand::array pool;
      if (val.get_array().get(pool) == simdjson::SUCCESS) {
        int i = 0;
        for (auto p : pool) {
          int64_t id = 0;
          if (i < 2 && p.get_int64().get(id) == simdjson::SUCCESS) s.pool_id[i] = id;
          ++i;
        }
      }
    } else if (key == "frames") ok = stack(val, "segment", s.stack);
    else if (key == "blocks") {
      simdjson::ondemand::array blocks;
      if (auto e = val.get_array().get(blocks)) return json_fail(e, "a list for segment field 'blocks'");
      if (have_blocks) return fail("expected one 'blocks' field per segment");
      have_blocks = true;
      for (auto item : blocks) {
        value bv;
        if (auto e = item.get(bv)) return json_fail(e, "a block");
        if (!block(bv)) return false;
      }
    }
    if (!ok) return false;
  }
  if (!have_address || !have_total) return fail("expected 'address' and 'total_size' fields in each segment");
  if (!have_blocks) return fail("expected a 'blocks' field in each segment");
  if (int64_t(device) < INT16_MIN || int64_t(device) > INT16_MAX) return fail("expected a device index for segment field 'device'");
  s.device = static_cast<int16_t>(int64_t(device));
  s.stream = b_.stream(stream);
  s.block_count = static_cast<uint32_t>(snap.blocks.size() - s.first_block);
  snap.segments.push_back(s);
  return true;
}

std::string JsonDecoder::text_of(value v) {
  // Settings are shown as text: strings unquoted, everything else as its JSON.
  json_type t;
  if (v.type().get(t) != simdjson::SUCCESS) return "?";
  std::string_view raw;
  simdjson::error_code e = simdjson::SUCCESS;
  if (t == json_type::string) e = v.get_string().get(raw);
  else if (t == json_type::object) {
    simdjson::ondemand::object o;
    e = v.get_object().get(o);
    if (e == simdjson::SUCCESS) e = o.raw_json().get(raw);
  } else if (t == json_type::array) {
    simdjson::ondemand::array a;
    e = v.get_array().get(a);
    if (e == simdjson::SUCCESS) e = a.raw_json().get(raw);
  }
  else raw = v.raw_json_token();
  if (e != simdjson::SUCCESS) return "?";
  std::string text(raw);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t'))
    text.pop_back();
  return text;
}

bool JsonDecoder::settings(value v) {
  simdjson::ondemand::object o;
  if (v.get_object().get(o) != simdjson::SUCCESS) return true;  // optional decoration
  for (auto field : o) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return json_fail(e, "an allocator setting name");
    value val;
    if (auto e = field.value().get(val)) return json_fail(e, "an allocator setting value");
    std::string k(key);
    b_.snapshot().allocator_settings.emplace_back(std::move(k), text_of(val));
  }
  return true;
}

bool JsonDecoder::annotations(value v) {
  simdjson::ondemand::array list;
  if (v.get_array().get(list) != simdjson::SUCCESS) return true;
  for (auto item : list) {
    simdjson::ondemand::object o;
    if (auto e = item.get_object().get(o)) return json_fail(e, "each external annotation to be an object");
    Annotation a;
    for (auto field : o) {
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return json_fail(e, "an annotation field name");
      value val = field.value();
      uint64_t n = 0;
      bool ok = true;
      if (key == "stage") ok = get_str(val, "annotation", "stage", a.stage);
      else if (key == "name") ok = get_str(val, "annotation", "name", a.name);
      else if (key == "device") ok = get_u64(val, "annotation", "device", n), a.device = int(n);
      else if (key == "time_us") ok = get_u64(val, "annotation", "time_us", n), a.time_us = int64_t(n);
      if (!ok) return false;
    }
    b_.snapshot().annotations.push_back(a);
  }
  return true;
}

bool JsonDecoder::run(simdjson::ondemand::document& doc) {
  doc_ = &doc;
  json_type t;
  if (auto e = doc.type().get(t)) return json_fail(e, "a JSON object with 'segments' and 'device_traces'");
  auto read_segments = [&](simdjson::ondemand::array segs) {
    for (auto item : segs) {
      value sv;
      if (auto e = item.get(sv)) return json_fail(e, "a segment");
      b_.missing.emplace_back();
      if (!segment(sv, b_.missing.back())) return false;
    }
    return true;
  };
  if (t == json_type::array) {  // a bare list of segments
    simdjson::ondemand::array segs;
    if (auto e = doc.get_array().get(segs)) return json_fail(e, "a list of segments");
    if (!read_segments(segs)) return false;
  } else {
    simdjson::ondemand::object root;
    if (auto e = doc.get_object().get(root)) return json_fail(e, "a JSON object with 'segments' and 'device_traces'");
    bool have_segments = false;
    for (auto field : root) {
      std::string_view key;
      if (auto e = field.unescaped_key().get(key)) return json_fail(e, "a top-level key");
      value val;
      if (auto e = field.value().get(val)) return json_fail(e, "a top-level value");
      if (key == "segments") {
        simdjson::ondemand::array segs;
        if (auto e = val.get_array().get(segs)) return json_fail(e, "a list for 'segments'");
        if (!read_segments(segs)) return false;
        have_segments = true;
      } else if (key == "device_traces") {
        simdjson::ondemand::array devices;
        if (auto e = val.get_array().get(devices)) return json_fail(e, "a list of lists for 'device_traces'");
        int device = 0;
        for (auto dv : devices) {
          simdjson::ondemand::array entries;
          if (auto e = dv.get_array().get(entries)) return json_fail(e, "a list of trace entries per device");
          for (auto ev : entries) {
            value v;
            if (auto e = ev.get(v)) return json_fail(e, "a trace entry");
            if (!entry(v, device)) return false;
          }
          ++device;
        }
      } else if (key == "allocator_settings") {
        if (!settings(val)) return false;
      } else if (key == "external_annotations") {
        if (!annotations(val)) return false;
      }
    }
    if (!have_segments) return fail("expected a 'segments' key in the top-level object (PyTorch snapshot schema)");
  }
  const char* trailing = nullptr;
  if (doc.current_location().get(trailing) == simdjson::SUCCESS)
    return fail("expected the end of the document after the top-level value");
  return true;
}

// The document from the reader's position on; offsets count from there.
Result<Snapshot> read_document(ByteReader& reader, const std::string& name, const LoadOptions& options) {
  // simdjson parses from one padded buffer: read (and gunzip) the whole stream first.
  std::vector<char> buffer;
  uint64_t next_report = 0;
  while (reader.ensure(1)) {
    const size_t n = reader.available();
    buffer.insert(buffer.end(), reader.data(), reader.data() + n);
    reader.consume(n);
    if (buffer.size() >= next_report) {
      next_report = buffer.size() + (8u << 20);
      if (options.cancel && options.cancel->load()) return LoadError{name, buffer.size(), "cancelled", true};
      if (options.progress) options.progress(0.5 * reader.source().progress());
    }
  }
  if (std::string damage = util::finish_input(reader); !damage.empty()) return LoadError{name, buffer.size(), damage};
  const size_t length = buffer.size();
  buffer.resize(length + simdjson::SIMDJSON_PADDING, '\0');

  SnapshotBuilder builder(name);
  JsonDecoder decoder(builder, buffer.data(), length, options);
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (auto e = parser.iterate(buffer.data(), length, buffer.size()).get(doc))
    return LoadError{name, 0, std::string("expected a JSON document (") + simdjson::error_message(e) + ")"};
  if (!decoder.run(doc)) return decoder.error(name);
  if (decoder.missing_times) builder.number_entries_without_times();
  return builder.finish(length);
}

}  // namespace

Result<Snapshot> read_json_snapshot(ByteReader& reader, const std::string& name, const LoadOptions& options) {
  // The document may start past a byte-order mark: errors name the file's byte.
  const uint64_t start = reader.offset();
  Result<Snapshot> result = read_document(reader, name, options);
  if (result.ok()) return result;
  LoadError error = result.error();
  error.offset += start;
  return error;
}

}  // namespace cudascope::analysis::detail
