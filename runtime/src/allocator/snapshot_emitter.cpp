#include "snapshot_emitter.h"

namespace cudascope::cuda::detail::alloc {
namespace {

void emit_frames(const std::vector<memory::Frame>& frames, Emitter& out) {
  out.begin_list();
  for (const auto& f : frames) {
    out.begin_dict();
    out.key("name");
    out.string(f.name);
    out.key("filename");
    out.string(f.filename);
    out.key("line");
    out.integer(f.line);
    out.end_dict();
  }
  out.end_list();
}

void emit_segment(const memory::SegmentInfo& s, Emitter& out) {
  out.begin_dict();
  out.key("device");
  out.integer(s.device);
  out.key("address");
  out.unsigned_integer(s.address);
  out.key("total_size");
  out.unsigned_integer(s.total_size);
  out.key("allocated_size");
  out.unsigned_integer(s.allocated_size);
  out.key("active_size");
  out.unsigned_integer(s.active_size);
  out.key("requested_size");
  out.unsigned_integer(s.requested_size);
  out.key("stream");
  out.integer(s.stream);
  out.key("segment_type");
  out.string(s.segment_type);
  out.key("segment_pool_id");
  out.pair(s.segment_pool_id.first, s.segment_pool_id.second);
  out.key("is_expandable");
  out.boolean(s.is_expandable);
  out.key("frames");
  emit_frames(s.frames, out);
  out.key("blocks");
  out.begin_list();
  for (const auto& b : s.blocks) {
    out.begin_dict();
    out.key("address");
    out.unsigned_integer(b.address);
    out.key("size");
    out.unsigned_integer(b.size);
    out.key("requested_size");
    out.unsigned_integer(b.requested_size);
    out.key("state");
    out.string(b.state);
    out.key("frames");
    emit_frames(b.frames, out);
    out.end_dict();
  }
  out.end_list();
  out.end_dict();
}

void emit_entry(const memory::TraceEntry& e, Emitter& out) {
  out.begin_dict();
  out.key("action");
  out.string(e.action);
  if (e.action == "oom") {
    out.key("device_free");
    out.unsigned_integer(e.device_free);
  } else {
    out.key("addr");
    out.unsigned_integer(e.addr);
  }
  out.key("size");
  out.unsigned_integer(e.size);
  out.key("stream");
  out.integer(e.stream);
  out.key("time_us");
  out.integer(e.time_us);
  out.key("compile_context");
  out.string(e.compile_context);
  out.key("user_metadata");
  out.string(e.user_metadata);
  out.key("frames");
  emit_frames(e.frames, out);
  out.end_dict();
}

}  // namespace

void emit_snapshot(const memory::Snapshot& snapshot, Emitter& out) {
  out.begin_dict();
  out.key("segments");
  out.begin_list();
  for (const auto& s : snapshot.segments) emit_segment(s, out);
  out.end_list();
  out.key("device_traces");
  out.begin_list();
  for (const auto& trace : snapshot.device_traces) {
    out.begin_list();
    for (const auto& e : trace) emit_entry(e, out);
    out.end_list();
  }
  out.end_list();
  const auto& a = snapshot.allocator_settings;
  out.key("allocator_settings");
  out.begin_dict();
  out.key("PYTORCH_CUDA_ALLOC_CONF");
  out.string(a.alloc_conf);
  out.key("max_split_size");
  out.integer(a.max_split_size);
  out.key("garbage_collection_threshold");
  out.real(a.garbage_collection_threshold);
  out.key("expandable_segments");
  out.boolean(a.expandable_segments);
  out.key("pinned_num_register_threads");
  out.integer(a.pinned_num_register_threads);
  out.key("release_lock_on_cudamalloc");
  out.boolean(a.release_lock_on_cudamalloc);
  out.key("pinned_use_cuda_host_register");
  out.boolean(a.pinned_use_cuda_host_register);
  out.key("graph_capture_record_stream_reuse");
  out.boolean(a.graph_capture_record_stream_reuse);
  out.key("roundup_power2_divisions");
  out.begin_dict();
  for (const auto& [interval, divisions] : a.roundup_power2_divisions) {
    out.key(std::to_string(interval));
    out.integer(divisions);
  }
  out.end_dict();
  out.end_dict();
  out.key("external_annotations");
  out.begin_list();
  out.end_list();
  out.end_dict();
}

}  // namespace cudascope::cuda::detail::alloc
