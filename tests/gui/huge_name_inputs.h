#pragma once
// Inputs named at any length, for the viewer's tests of how much of a name it lays out (a
// broken or hostile file can name an event or a frame with megabytes).

#include <string>
#include <vector>

namespace cudascope::gui::testing {

// A trace whose NVTX-style annotation and kernel share `name`, and a small kernel after them.
inline std::string huge_name_trace(const std::string& name) {
  return R"({"traceEvents":[{"ph":"X","cat":"user_annotation","name":")" + name + R"(","ts":0,"dur":100,"pid":1,"tid":1},)" +
         R"({"ph":"X","cat":"kernel","name":")" + name + R"(","ts":20,"dur":50,"pid":0,"tid":7,"args":{"stream":7}},)" +
         R"({"ph":"X","cat":"kernel","name":"small_kernel","ts":80,"dur":5,"pid":0,"tid":7,"args":{"stream":7}}]})";
}

// A trace of one kernel, "keyed_kernel", whose args hold "key_value" under the key `key`.
inline std::string huge_key_trace(const std::string& key) {
  return R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"keyed_kernel","ts":0,"dur":10,"pid":0,"tid":7,"args":{"stream":7,")" +
         key + R"(":"key_value"}}]})";
}

// A snapshot in PyTorch's JSON schema, one allocation (and live block) per name, each from a
// frame of that name at train.py:12, 13, ... under the allocator's own (hidden) frame and,
// between the two, C++ frames (no location) named `cpp_frames`, innermost first.
inline std::string snapshot_json(const std::vector<std::string>& names, const std::vector<std::string>& cpp_frames = {}) {
  std::string cpp;
  for (const std::string& name : cpp_frames) cpp += R"js({"name": ")js" + name + R"js(", "filename": "??", "line": 0}, )js";
  std::string entries, blocks;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string frames =
        R"js([{"name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)", "filename": "??", "line": 0}, )js" +
        cpp + R"js({"name": ")js" + names[i] + R"js(", "filename": "train.py", "line": )js" + std::to_string(12 + i) + "}]";
    const std::string address = std::to_string(1048576 + 512 * i), sep = i ? "," : "";
    entries += sep + R"({"action": "alloc", "addr": )" + address + R"(, "size": 512, "stream": 0, "time_us": )" +
               std::to_string(10 + i) + R"(, "frames": )" + frames + "}";
    blocks += sep + R"({"address": )" + address + R"(, "size": 512, "requested_size": 512, "state": "active_allocated", "frames": )" +
              frames + "}";
  }
  const std::string total = std::to_string(512 * names.size());
  return R"({"segments": [{"device": 0, "address": 1048576, "total_size": )" + total + R"(, "allocated_size": )" + total +
         R"(, "active_size": )" + total + R"(, "requested_size": )" + total +
         R"(, "stream": 0, "segment_type": "small", "segment_pool_id": [0, 0], "is_expandable": false, "frames": [], "blocks": [)" +
         blocks + R"(]}], "device_traces": [[)" + entries + R"(]], "allocator_settings": {}})";
}

}  // namespace cudascope::gui::testing
