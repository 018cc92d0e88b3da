#pragma once
// A restricted unpickler: the subset of the pickle virtual machine (protocols 2 to 5) that
// plain data needs — dicts, lists, tuples, sets, strings, bytes, ints, floats, bools, None
// and the memo. Opcodes that import or call anything (GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
// INST, OBJ, NEWOBJ, EXT*, PERSID, out-of-band buffers) are rejected, so a snapshot file can
// never run code.
//
// Memory: objects are compact Values; containers live in a slot arena. A Sink sees every
// item appended to a list and may convert it to its own compact record; the container is
// then released and its slot reused, so a million trace-entry dicts never exist at once.

#include <cudascope/util/byte_source.h>

#include <cudascope/analysis/intern_tables.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cudascope::analysis::detail {

using util::ByteReader;
using util::ByteSource;

enum class Kind : uint8_t { none, boolean, integer, floating, string, list, dict, tuple, record };

struct Value {
  Kind kind = Kind::none;
  uint8_t flags = 0;  // integer: kUnsigned64 when the value is >= 2^63; record: the record type
  uint32_t ref = 0;   // string: StringId; list/dict/tuple: container slot; record: record index
  int64_t bits = 0;   // integer/boolean: the value; floating: the double's bits; container: generation
  static constexpr uint8_t kUnsigned64 = 1;
};

struct Container {
  std::vector<Value> items;  // dict: key, value, key, value, ...
  Kind kind = Kind::list;
  uint32_t generation = 0;
  uint32_t memo_index = UINT32_MAX;  // where MEMOIZE/PUT stored it, if anywhere
};

class PickleMachine;

// Sees each item appended to a list. May replace `item` by a record Value; return an error
// message (non-empty) to stop the load.
class PickleSink {
 public:
  virtual ~PickleSink() = default;
  virtual std::string on_append(PickleMachine& machine, Value& item) = 0;
};

class PickleMachine {
 public:
  struct Options {
    std::function<void(double)> progress;
    const std::atomic<bool>* cancel = nullptr;
    // The most memory the machine's own objects may take (the stack, the marks, the memo,
    // containers and their items; interned strings are bounded by the input budget). A
    // pickle is a program: a few input bytes can push or build many objects (1 byte per
    // None, 2 per empty list appended), so the input budget alone does not bound what it
    // builds. Past this the run fails naming the limit. 0: no limit.
    uint64_t max_object_bytes = 0;
  };
  // The limit readers use: half the input budget (vectors grow by doubling, so the machine
  // may briefly hold one and a half times what it counts).
  static uint64_t object_limit_for_budget(uint64_t input_budget_bytes) { return input_budget_bytes / 2; }

  PickleMachine(ByteReader& reader, StringTable& strings, PickleSink* sink, Options options);

  // Runs to STOP. On failure returns false; error()/error_offset() say why and where.
  bool run();
  const Value& result() const { return result_; }
  const std::string& error() const { return error_; }
  uint64_t error_offset() const { return error_offset_; }
  bool cancelled() const { return cancelled_; }
  uint64_t offset() const { return reader_.offset(); }

  // Access for sinks and decoders. container() returns nullptr for a stale reference.
  const Container* container(const Value& v) const;
  StringTable& strings() { return strings_; }
  // Value of `key` in a dict container, or nullptr.
  const Value* dict_get(const Container& dict, StringId key) const;
  // Frees a container a sink converted: memo entries that named it now name `replacement`.
  void release(const Value& container, const Value& replacement);

 private:
  bool fail(std::string message);
  // fail() for data that ends (or stops at the reader's budget) before `expected`.
  bool fail_short(const std::string& expected);
  bool op_error(uint8_t op);
  Value new_container(Kind kind);
  bool pop_mark(size_t& mark);
  bool memo_put(uint64_t index);
  bool memo_get(uint64_t index);
  bool read_string(size_t length, bool text);
  bool add_to_list(size_t first);
  bool add_to_dict(size_t first);
  // Bytes the machine's objects take now, as counted against Options::max_object_bytes.
  uint64_t object_bytes() const;

  ByteReader& reader_;
  StringTable& strings_;
  PickleSink* sink_;
  Options options_;
  std::vector<Value> stack_;
  std::vector<size_t> marks_;
  std::vector<Value> memo_;
  std::vector<Container> containers_;
  std::vector<uint32_t> free_slots_;
  uint64_t items_ = 0;  // Values held in containers' item lists
  Value result_;
  std::string error_;
  uint64_t error_offset_ = 0;
  uint64_t op_offset_ = 0;
  bool cancelled_ = false;
};

}  // namespace cudascope::analysis::detail
