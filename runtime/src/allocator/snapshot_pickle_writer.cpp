// The snapshot as a pickle (protocol 4): the opcodes Python's pickle.dump uses for plain
// dicts, lists, tuples, strings, ints, floats and bools, so torch's tools and
// pickle.load read it. No memo: every object is written once.
#include "snapshot_emitter.h"

#include <cstring>
#include <vector>

namespace cudascope::cuda {
namespace {

class PickleEmitter final : public detail::alloc::Emitter {
 public:
  explicit PickleEmitter(std::string& out) : out_(out) {}
  void begin_dict() override {
    out_ += '}';  // EMPTY_DICT
    out_ += '(';  // MARK
  }
  void end_dict() override { out_ += 'u'; }  // SETITEMS (an empty MARK..SETITEMS is valid)
  void begin_list() override {
    out_ += ']';  // EMPTY_LIST
    out_ += '(';
  }
  void end_list() override { out_ += 'e'; }  // APPENDS
  void key(std::string_view k) override { string(k); }
  void string(std::string_view s) override {
    if (s.size() < 256) {
      out_ += '\x8c';  // SHORT_BINUNICODE
      out_ += static_cast<char>(s.size());
    } else {
      out_ += 'X';  // BINUNICODE
      little_endian(s.size(), 4);
    }
    out_.append(s.data(), s.size());
  }
  void integer(std::int64_t v) override {
    if (v >= 0 && v < 256) {
      out_ += 'K';  // BININT1
      out_ += static_cast<char>(v);
    } else if (v >= 0 && v < 65536) {
      out_ += 'M';  // BININT2
      little_endian(static_cast<std::uint64_t>(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      out_ += 'J';  // BININT
      little_endian(static_cast<std::uint32_t>(static_cast<std::int32_t>(v)), 4);
    } else {
      long1(static_cast<std::uint64_t>(v), v < 0);
    }
  }
  void unsigned_integer(std::uint64_t v) override {
    if (v <= static_cast<std::uint64_t>(INT32_MAX)) return integer(static_cast<std::int64_t>(v));
    long1(v, false);
  }
  void real(double v) override {
    out_ += 'G';  // BINFLOAT, big-endian
    std::uint64_t bits = 0;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 7; i >= 0; --i) out_ += static_cast<char>((bits >> (8 * i)) & 0xff);
  }
  void boolean(bool v) override { out_ += v ? '\x88' : '\x89'; }  // NEWTRUE / NEWFALSE
  void pair(std::int64_t a, std::int64_t b) override {
    integer(a);
    integer(b);
    out_ += '\x86';  // TUPLE2
  }

 private:
  void little_endian(std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_ += static_cast<char>((v >> (8 * i)) & 0xff);
  }
  // LONG1: the shortest little-endian two's-complement form; an unsigned value with its
  // top bit set takes a ninth byte so it stays positive.
  void long1(std::uint64_t v, bool negative) {
    std::vector<char> bytes;
    for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    if (!negative && (v >> 63) != 0) bytes.push_back(0);
    while (bytes.size() > 1) {
      const auto last = static_cast<unsigned char>(bytes.back());
      const auto before = static_cast<unsigned char>(bytes[bytes.size() - 2]);
      if (!negative && last == 0 && (before & 0x80) == 0) {
        bytes.pop_back();
      } else if (negative && last == 0xff && (before & 0x80) != 0) {
        bytes.pop_back();
      } else {
        break;
      }
    }
    out_ += '\x8a';
    out_ += static_cast<char>(bytes.size());
    out_.append(bytes.data(), bytes.size());
  }

  std::string& out_;
};

}  // namespace

std::string memory::snapshot_to_pickle(const Snapshot& snapshot) {
  std::string out = "\x80\x04";  // PROTO 4
  PickleEmitter emitter(out);
  detail::alloc::emit_snapshot(snapshot, emitter);
  out += '.';  // STOP
  return out;
}

}  // namespace cudascope::cuda
