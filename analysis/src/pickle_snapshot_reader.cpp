// PyTorch's snapshot pickle -> Snapshot. The restricted PickleMachine does the parsing; the
// decoder below is its sink: trace entries and blocks are turned into compact records the
// moment they are appended to their list, and the rest (segments, settings) is assembled
// after STOP from what is left.

#include "pickle_machine.h"
#include "snapshot_builder.h"
#include "snapshot_readers.h"

#include <bit>
#include <cstdio>

namespace cudascope::analysis::detail {
namespace {

constexpr uint8_t kEntryRecord = 1;
constexpr uint8_t kBlockRecord = 2;

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::none: return "None";
    case Kind::boolean: return "a bool";
    case Kind::integer: return "an integer";
    case Kind::floating: return "a float";
    case Kind::string: return "a string";
    case Kind::list: return "a list";
    case Kind::dict: return "a dict";
    case Kind::tuple: return "a tuple";
    case Kind::record: return "a converted record";
  }
  return "a value";
}

class Decoder final : public PickleSink {
 public:
  Decoder(SnapshotBuilder& builder) : b_(builder), strings_(builder.snapshot().strings) {
    auto k = [&](const char* s) { return strings_.intern(s); };
    k_action = k("action"), k_addr = k("addr"), k_size = k("size"), k_stream = k("stream");
    k_time_us = k("time_us"), k_frames = k("frames"), k_compile_context = k("compile_context");
    k_user_metadata = k("user_metadata"), k_device_free = k("device_free"), k_state = k("state");
    k_address = k("address"), k_requested_size = k("requested_size"), k_name = k("name");
    k_filename = k("filename"), k_line = k("line"), k_segments = k("segments");
    k_device_traces = k("device_traces"), k_allocator_settings = k("allocator_settings");
    k_external_annotations = k("external_annotations"), k_total_size = k("total_size");
    k_allocated_size = k("allocated_size"), k_active_size = k("active_size"), k_device = k("device");
    k_segment_type = k("segment_type"), k_segment_pool_id = k("segment_pool_id");
    k_is_expandable = k("is_expandable"), k_blocks = k("blocks"), k_stage = k("stage");
    k_history = k("history"), k_real_size = k("real_size");
  }

  std::string on_append(PickleMachine& m, Value& item) override {
    if (item.kind != Kind::dict) return {};
    const Container* c = m.container(item);
    if (!c) return {};
    Value record;
    record.kind = Kind::record;
    std::string error;
    if (m.dict_get(*c, k_action)) {
      record.flags = kEntryRecord;
      record.ref = b_.entry_count();
      error = convert_entry(m, *c);
    } else if (m.dict_get(*c, k_state) && m.dict_get(*c, k_size)) {
      record.flags = kBlockRecord;
      record.ref = static_cast<uint32_t>(b_.snapshot().blocks.size());
      error = convert_block(m, *c);
    } else {
      return {};
    }
    if (!error.empty()) return error;
    m.release(item, record);
    item = record;
    return {};
  }

  Result<Snapshot> assemble(PickleMachine& m, const std::string& name);

  StringId k_action, k_addr, k_size, k_stream, k_time_us, k_frames, k_compile_context, k_user_metadata,
      k_device_free, k_state, k_address, k_requested_size, k_name, k_filename, k_line, k_segments,
      k_device_traces, k_allocator_settings, k_external_annotations, k_total_size, k_allocated_size,
      k_active_size, k_device, k_segment_type, k_segment_pool_id, k_is_expandable, k_blocks, k_stage, k_history,
      k_real_size;
  bool missing_times = false;

 private:
  // Field readers: return an error message or "" (absent optional fields leave `out` alone).
  std::string field_error(const char* what, StringId key, const char* expected, const Value& found) {
    return std::string("expected ") + expected + " for " + what + " field '" + std::string(strings_.get(key)) +
           "', found " + kind_name(found.kind);
  }
  std::string get_u64(PickleMachine& m, const Container& d, const char* what, StringId key, uint64_t& out,
                      bool required) {
    const Value* v = m.dict_get(d, key);
    if (!v) return required ? std::string(what) + " has no '" + std::string(strings_.get(key)) + "' field" : "";
    if (v->kind != Kind::integer) return field_error(what, key, "an integer", *v);
    out = static_cast<uint64_t>(v->bits);
    return {};
  }
  std::string get_i64(PickleMachine& m, const Container& d, const char* what, StringId key, int64_t& out,
                      bool required) {
    uint64_t u = 0;
    std::string e = get_u64(m, d, what, key, u, required);
    if (e.empty() && m.dict_get(d, key)) out = static_cast<int64_t>(u);
    return e;
  }
  std::string get_str(PickleMachine& m, const Container& d, const char* what, StringId key, StringId& out) {
    const Value* v = m.dict_get(d, key);
    if (!v || v->kind == Kind::none) return {};
    if (v->kind != Kind::string) return field_error(what, key, "a string", *v);
    out = v->ref;
    return {};
  }

  std::string convert_stack(PickleMachine& m, const Container& d, const char* what, StackId& out) {
    const Value* v = m.dict_get(d, k_frames);
    if (!v || v->kind == Kind::none) return {};
    const Container* list = m.container(*v);
    if (!list || (v->kind != Kind::list && v->kind != Kind::tuple))
      return field_error(what, k_frames, "a list of frames", *v);
    if (const uint32_t* cached = stack_cache_.find(*v)) {
      out = *cached;
      return {};
    }
    frame_ids_.clear();
    for (const Value& f : list->items) {
      const Container* fd = m.container(f);
      if (!fd || f.kind != Kind::dict) return std::string("expected each frame of ") + what + " to be a dict, found " + kind_name(f.kind);
      const uint32_t* frame_id = frame_cache_.find(f);
      if (!frame_id) {
        Frame frame;
        int64_t line = 0;
        std::string e = get_str(m, *fd, "frame", k_name, frame.name);
        if (e.empty()) e = get_str(m, *fd, "frame", k_filename, frame.filename);
        if (e.empty()) e = get_i64(m, *fd, "frame", k_line, line, false);
        if (!e.empty()) return e;
        frame.line = static_cast<int32_t>(line);
        frame_id = frame_cache_.insert(f, b_.snapshot().frames.intern(frame));
      }
      frame_ids_.push_back(*frame_id);
    }
    out = b_.snapshot().stacks.intern(frame_ids_);
    stack_cache_.insert(*v, out);
    return {};
  }

  std::string convert_entry(PickleMachine& m, const Container& d) {
    Snapshot& snap = b_.snapshot();
    TraceEntry e;
    const Value* action = m.dict_get(d, k_action);
    if (action->kind != Kind::string) return field_error("trace entry", k_action, "a string", *action);
    const auto parsed = parse_action(strings_.get(action->ref));
    if (!parsed)
      return "expected a trace action (alloc, free_requested, free_completed, segment_alloc, segment_free, "
             "segment_map, segment_unmap, snapshot, oom, annotate), found '" + std::string(strings_.get(action->ref)) + "'";
    e.action = *parsed;
    uint64_t stream = 0;
    std::string err = get_u64(m, d, "trace entry", k_addr, e.addr, false);
    if (err.empty()) err = get_u64(m, d, "trace entry", k_size, e.size, false);
    if (err.empty()) err = get_u64(m, d, "trace entry", k_stream, stream, false);
    if (err.empty()) {
      if (m.dict_get(d, k_time_us)) err = get_i64(m, d, "trace entry", k_time_us, e.time_us, true);
      else missing_times = true;
    }
    if (err.empty()) err = get_str(m, d, "trace entry", k_compile_context, e.compile_context);
    if (err.empty()) err = get_str(m, d, "trace entry", k_user_metadata, e.user_metadata);
    if (err.empty()) err = convert_stack(m, d, "trace entry", e.stack);
    if (err.empty() && e.action == Action::oom) {
      uint64_t device_free = 0;
      err = get_u64(m, d, "trace entry", k_device_free, device_free, false);
      snap.oom_device_free.emplace_back(b_.entry_count(), device_free);
    }
    if (!err.empty()) return err;
    e.stream = b_.stream(stream);
    b_.add_entry(e);
    return {};
  }

  std::string convert_block(PickleMachine& m, const Container& d) {
    Block block;
    block.address = kUnknownAddress;
    const Value* state = m.dict_get(d, k_state);
    if (state->kind != Kind::string) return field_error("block", k_state, "a string", *state);
    const auto parsed = parse_block_state(strings_.get(state->ref));
    if (!parsed)
      return "expected a block state (active_allocated, active_pending_free, inactive), found '" +
             std::string(strings_.get(state->ref)) + "'";
    block.state = *parsed;
    std::string err = get_u64(m, d, "block", k_size, block.size, true);
    if (err.empty()) err = get_u64(m, d, "block", k_address, block.address, false);
    block.requested_size = block.size;
    if (err.empty()) err = get_u64(m, d, "block", k_requested_size, block.requested_size, false);
    if (err.empty()) err = convert_stack(m, d, "block", block.stack);
    if (err.empty() && (!m.dict_get(d, k_requested_size) || !m.dict_get(d, k_frames))) err = convert_history(m, d, block);
    if (!err.empty()) return err;
    b_.snapshot().blocks.push_back(block);
    return {};
  }

  // PyTorch before 2.1 kept a block's requested size (1.13) and stack (1.13, 2.0) only in its
  // "history" of allocations, newest first: torch/cuda/_memory_viz.py's _block_extra_legacy
  // reads the first entry's "real_size" and "frames", and so does this, for what the block
  // lacks (the JSON reader's block_history has the same rule).
  std::string convert_history(PickleMachine& m, const Container& d, Block& block) {
    const Value* v = m.dict_get(d, k_history);
    if (!v) return {};
    const Container* list = m.container(*v);
    if (!list || v->kind != Kind::list) return field_error("block", k_history, "a list of allocations", *v);
    if (list->items.empty()) return {};
    const Value& newest = list->items.front();
    const Container* entry = m.container(newest);
    if (!entry || newest.kind != Kind::dict)
      return std::string("expected each entry of a block's 'history' to be a dict, found ") + kind_name(newest.kind);
    std::string err;
    if (!m.dict_get(d, k_requested_size)) err = get_u64(m, *entry, "block history", k_real_size, block.requested_size, true);
    if (err.empty() && !m.dict_get(d, k_frames)) err = convert_stack(m, *entry, "block history", block.stack);
    return err;
  }

 public:
  std::string convert_segment(PickleMachine& m, const Container& d, std::vector<Block>& blocks_out,
                              SnapshotBuilder::Missing& missing);
  std::string text_of(PickleMachine& m, const Value& v, int depth);

 private:
  SnapshotBuilder& b_;
  StringTable& strings_;
  // What a frame dict or a frames list already converted to, by the container that holds
  // it: PyTorch's pickles share frame objects (memo references), so most lookups hit.
  // Indexed by container slot with its generation, since slots are reused after release.
  class ContainerCache {
   public:
    const uint32_t* find(const Value& container) const {
      if (container.ref >= slots_.size()) return nullptr;
      const Slot& slot = slots_[container.ref];
      return slot.generation == static_cast<uint32_t>(container.bits) && slot.id != kNone ? &slot.id : nullptr;
    }
    const uint32_t* insert(const Value& container, uint32_t id) {
      if (container.ref >= slots_.size()) slots_.resize(container.ref + 1 + container.ref / 2);
      slots_[container.ref] = Slot{static_cast<uint32_t>(container.bits), id};
      return &slots_[container.ref].id;
    }

   private:
    static constexpr uint32_t kNone = UINT32_MAX;
    struct Slot {
      uint32_t generation = 0;
      uint32_t id = kNone;
    };
    std::vector<Slot> slots_;
  };
  ContainerCache frame_cache_;  // FrameIds
  ContainerCache stack_cache_;  // StackIds
  std::vector<FrameId> frame_ids_;
};

std::string Decoder::convert_segment(PickleMachine& m, const Container& d, std::vector<Block>& blocks_out,
                                     SnapshotBuilder::Missing& missing) {
  Snapshot& snap = b_.snapshot();
  Segment s;
  uint64_t stream = 0;
  int64_t device = 0;
  std::string err = get_u64(m, d, "segment", k_address, s.address, true);
  if (err.empty()) err = get_u64(m, d, "segment", k_total_size, s.total_size, true);
  missing.allocated = !m.dict_get(d, k_allocated_size);
  missing.active = !m.dict_get(d, k_active_size);
  missing.requested = !m.dict_get(d, k_requested_size);
  if (err.empty()) err = get_u64(m, d, "segment", k_allocated_size, s.allocated_size, false);
  if (err.empty()) err = get_u64(m, d, "segment", k_active_size, s.active_size, false);
  if (err.empty()) err = get_u64(m, d, "segment", k_requested_size, s.requested_size, false);
  if (err.empty()) err = get_u64(m, d, "segment", k_stream, stream, false);
  if (err.empty()) err = get_i64(m, d, "segment", k_device, device, false);
  if (err.empty()) err = get_str(m, d, "segment", k_segment_type, s.segment_type);
  if (err.empty()) err = convert_stack(m, d, "segment", s.stack);
  if (!err.empty()) return err;
  if (const Value* v = m.dict_get(d, k_is_expandable)) s.is_expandable = v->kind == Kind::boolean && v->bits;
  if (const Value* v = m.dict_get(d, k_segment_pool_id)) {
    if (const Container* pool = m.container(*v)) {
      for (size_t i = 0; i < 2 && i < pool->items.size(); ++i)
        if (pool->items[i].kind == Kind::integer) s.pool_id[i] = pool->items[i].bits;
    }
  }
  if (device < INT16_MIN || device > INT16_MAX) return "expected a device index, found " + std::to_string(device);
  s.device = static_cast<int16_t>(device);
  s.stream = b_.stream(stream);
  const Value* blocks = m.dict_get(d, k_blocks);
  if (!blocks) return "segment has no 'blocks' field";
  const Container* list = m.container(*blocks);
  if (!list) return field_error("segment", k_blocks, "a list of blocks", *blocks);
  s.first_block = static_cast<uint32_t>(blocks_out.size());
  for (const Value& item : list->items) {
    if (item.kind != Kind::record || item.flags != kBlockRecord || item.ref >= snap.blocks.size())
      return std::string("expected each block to be a dict with 'state' and 'size', found ") + kind_name(item.kind);
    blocks_out.push_back(snap.blocks[item.ref]);
  }
  s.block_count = static_cast<uint32_t>(blocks_out.size() - s.first_block);
  snap.segments.push_back(s);
  return {};
}

std::string Decoder::text_of(PickleMachine& m, const Value& v, int depth) {
  switch (v.kind) {
    case Kind::none: return "None";
    case Kind::boolean: return v.bits ? "True" : "False";
    case Kind::integer:
      return v.flags & Value::kUnsigned64 ? std::to_string(uint64_t(v.bits)) : std::to_string(v.bits);
    case Kind::floating: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g", std::bit_cast<double>(v.bits));
      return buf;
    }
    case Kind::string: return std::string(strings_.get(v.ref));
    case Kind::record: return "<record>";
    default: break;
  }
  const Container* c = m.container(v);
  if (!c || depth > 3) return "...";
  const bool dict = v.kind == Kind::dict;
  std::string text = dict ? "{" : v.kind == Kind::tuple ? "(" : "[";
  for (size_t i = 0; i < c->items.size(); ++i) {
    if (i) text += dict && i % 2 ? ": " : ", ";
    text += text_of(m, c->items[i], depth + 1);
  }
  text += dict ? "}" : v.kind == Kind::tuple ? ")" : "]";
  return text;
}

Result<Snapshot> Decoder::assemble(PickleMachine& m, const std::string& name) {
  b_.gather_entries();
  Snapshot& snap = b_.snapshot();
  const uint64_t end = m.offset();
  auto error = [&](std::string what) { return LoadError{name, end, std::move(what)}; };
  const Value& root = m.result();
  const Container* top = m.container(root);
  const Value* segments = nullptr;
  const Value* traces = nullptr;
  if (root.kind == Kind::list && top) {
    segments = &root;  // torch.cuda.memory_snapshot(): just the list of segments
  } else if (root.kind == Kind::dict && top) {
    segments = m.dict_get(*top, k_segments);
    traces = m.dict_get(*top, k_device_traces);
    if (!segments) return error("expected a 'segments' key in the top-level dict (PyTorch snapshot schema)");
  } else {
    return error(std::string("expected a dict with 'segments' and 'device_traces' at the top level, found ") +
                 kind_name(root.kind));
  }

  const Container* seg_list = m.container(*segments);
  if (!seg_list || segments->kind != Kind::list)
    return error(std::string("expected 'segments' to be a list, found ") + kind_name(segments->kind));
  std::vector<Block> blocks;
  blocks.reserve(snap.blocks.size());
  for (const Value& sv : seg_list->items) {
    const Container* sd = m.container(sv);
    if (!sd || sv.kind != Kind::dict) return error(std::string("expected each segment to be a dict, found ") + kind_name(sv.kind));
    b_.missing.emplace_back();
    if (std::string e = convert_segment(m, *sd, blocks, b_.missing.back()); !e.empty()) return error("in segment " + std::to_string(snap.segments.size()) + ": " + e);
  }
  snap.blocks = std::move(blocks);

  if (traces && traces->kind != Kind::none) {
    const Container* dev_lists = m.container(*traces);
    if (!dev_lists || traces->kind != Kind::list)
      return error(std::string("expected 'device_traces' to be a list of lists, found ") + kind_name(traces->kind));
    // Entries were converted in file order; each device's list normally names a
    // consecutive run of them. Anything else is reordered (and strays dropped).
    bool in_order = true;
    uint32_t cursor = 0;
    for (size_t d = 0; d < dev_lists->items.size(); ++d) {
      const Value& lv = dev_lists->items[d];
      const Container* list = m.container(lv);
      if (!list || lv.kind != Kind::list)
        return error("expected device_traces[" + std::to_string(d) + "] to be a list, found " + kind_name(lv.kind));
      for (const Value& ev : list->items) {
        if (ev.kind != Kind::record || ev.flags != kEntryRecord || ev.ref >= snap.trace.size())
          return error("expected each entry of device_traces[" + std::to_string(d) +
                       "] to be a dict with an 'action', found " + kind_name(ev.kind));
        if (ev.ref != cursor++) in_order = false;
        snap.trace[ev.ref].device = static_cast<int16_t>(d);
      }
    }
    if (!in_order || cursor != snap.trace.size()) {
      std::vector<TraceEntry> ordered;
      std::vector<uint32_t> new_index(snap.trace.size(), UINT32_MAX);
      for (size_t d = 0; d < dev_lists->items.size(); ++d)
        for (const Value& ev : m.container(dev_lists->items[d])->items) {
          new_index[ev.ref] = static_cast<uint32_t>(ordered.size());
          ordered.push_back(snap.trace[ev.ref]);
          ordered.back().device = static_cast<int16_t>(d);
        }
      std::vector<std::pair<uint32_t, uint64_t>> oom;
      for (auto [i, free] : snap.oom_device_free)
        if (new_index[i] != UINT32_MAX) oom.emplace_back(new_index[i], free);
      snap.oom_device_free = std::move(oom);
      snap.trace = std::move(ordered);
    }
  } else {
    snap.trace.clear();
    snap.oom_device_free.clear();
  }

  if (top && root.kind == Kind::dict) {
    if (const Value* settings = m.dict_get(*top, k_allocator_settings)) {
      if (const Container* sd = m.container(*settings); sd && settings->kind == Kind::dict)
        for (size_t i = 0; i + 1 < sd->items.size(); i += 2)
          snap.allocator_settings.emplace_back(text_of(m, sd->items[i], 0), text_of(m, sd->items[i + 1], 0));
    }
    if (const Value* notes = m.dict_get(*top, k_external_annotations)) {
      if (const Container* list = m.container(*notes)) {
        for (const Value& nv : list->items) {
          const Container* nd = m.container(nv);
          if (!nd || nv.kind != Kind::dict) continue;  // annotations are optional decoration
          Annotation a;
          int64_t device = 0;
          get_str(m, *nd, "annotation", k_stage, a.stage);
          get_str(m, *nd, "annotation", k_name, a.name);
          get_i64(m, *nd, "annotation", k_device, device, false);
          get_i64(m, *nd, "annotation", k_time_us, a.time_us, false);
          a.device = static_cast<int>(device);
          snap.annotations.push_back(a);
        }
      }
    }
  }
  if (missing_times) b_.number_entries_without_times();
  return b_.finish(end);
}

}  // namespace

Result<Snapshot> read_pickle_snapshot(ByteReader& reader, const std::string& name, const LoadOptions& options,
                                      uint64_t budget) {
  SnapshotBuilder builder(name);
  Decoder decoder(builder);
  PickleMachine machine(reader, builder.snapshot().strings, &decoder,
                        PickleMachine::Options{options.progress, options.cancel,
                                               PickleMachine::object_limit_for_budget(budget)});
  if (!machine.run()) {
    // A damaged gzip stream ends the data early; its own message names the real cause.
    if (!reader.error().empty()) return LoadError{name, reader.offset(), reader.error()};
    LoadError error{name, machine.error_offset(), machine.error()};
    error.cancelled = machine.cancelled();
    return error;
  }
  // Nothing may follow STOP, and a gzip stream must end with its checked trailer: figures
  // from a damaged file are refused, as the JSON reader and replay refuse them.
  const uint64_t stop_end = reader.offset();
  if (std::string damage = util::finish_input(reader); !damage.empty()) return LoadError{name, stop_end, damage};
  return decoder.assemble(machine, name);
}

}  // namespace cudascope::analysis::detail
