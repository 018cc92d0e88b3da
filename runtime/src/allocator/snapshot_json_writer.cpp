// The snapshot as JSON (the shape pytorch.org/memory_viz and cudascope's viewer read).
#include "snapshot_emitter.h"

#include <cudascope/util/json_escape.h>

#include <cmath>
#include <cstdio>
#include <vector>

namespace cudascope::cuda {
namespace {

class JsonEmitter final : public detail::alloc::Emitter {
 public:
  explicit JsonEmitter(std::string& out) : out_(out) {}
  void begin_dict() override {
    value_prefix();
    out_ += '{';
    first_.push_back(true);
  }
  void end_dict() override {
    out_ += '}';
    first_.pop_back();
  }
  void begin_list() override {
    value_prefix();
    out_ += '[';
    first_.push_back(true);
  }
  void end_list() override {
    out_ += ']';
    first_.pop_back();
  }
  void key(std::string_view k) override {
    separator();
    quoted(k);
    out_ += ':';
    after_key_ = true;
  }
  void string(std::string_view s) override {
    value_prefix();
    quoted(s);
  }
  void integer(std::int64_t v) override {
    value_prefix();
    out_ += std::to_string(v);
  }
  void unsigned_integer(std::uint64_t v) override {
    value_prefix();
    out_ += std::to_string(v);
  }
  void real(double v) override {
    value_prefix();
    char text[64];
    std::snprintf(text, sizeof text, "%.17g", std::isfinite(v) ? v : 0.0);
    std::string t = text;
    if (t.find_first_of(".eEn") == std::string::npos) t += ".0";  // stays a float when read back
    out_ += t;
  }
  void boolean(bool v) override {
    value_prefix();
    out_ += v ? "true" : "false";
  }
  void pair(std::int64_t a, std::int64_t b) override {
    value_prefix();
    out_ += '[' + std::to_string(a) + ',' + std::to_string(b) + ']';
  }

 private:
  void separator() {
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void value_prefix() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    separator();
  }
  void quoted(std::string_view s) { util::append_json_string(out_, s); }

  std::string& out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace

std::string memory::snapshot_to_json(const Snapshot& snapshot) {
  std::string out;
  JsonEmitter emitter(out);
  detail::alloc::emit_snapshot(snapshot, emitter);
  return out;
}

}  // namespace cudascope::cuda
