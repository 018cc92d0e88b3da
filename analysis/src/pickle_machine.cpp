#include "pickle_machine.h"

#include <cudascope/util/byte_format.h>

#include <bit>
#include <cstring>

namespace cudascope::analysis::detail {
namespace {

constexpr size_t kMaxString = size_t{1} << 28;  // longer than any name a snapshot holds

uint64_t load_le(const char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= uint64_t(uint8_t(p[i])) << (8 * i);
  return v;
}

const char* opcode_name(uint8_t op) {
  switch (op) {
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 0x82: case 0x83: case 0x84: return "EXT";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case 'I': return "INT";
    case 'L': return "LONG";
    case 'F': return "FLOAT";
    case 'S': return "STRING";
    case 'V': return "UNICODE";
    case 'g': return "GET";
    case 'p': return "PUT";
    default: return nullptr;
  }
}

std::string hex(uint8_t op) {
  static const char* digits = "0123456789abcdef";
  return std::string("0x") + digits[op >> 4] + digits[op & 15];
}

}  // namespace

PickleMachine::PickleMachine(ByteReader& reader, StringTable& strings, PickleSink* sink, Options options)
    : reader_(reader), strings_(strings), sink_(sink), options_(std::move(options)) {
  stack_.reserve(1024);
}

bool PickleMachine::fail(std::string message) {
  if (error_.empty()) {
    error_ = std::move(message);
    error_offset_ = op_offset_;
  }
  return false;
}

bool PickleMachine::op_error(uint8_t op) {
  if (const char* name = opcode_name(op))
    return fail(std::string("expected a data-only pickle opcode, found ") + name + " (" + hex(op) +
                "): snapshots hold only dicts, lists, tuples, strings and numbers, and this reader "
                "never imports or calls anything");
  return fail("expected a pickle opcode, found unknown byte " + hex(op));
}

const Container* PickleMachine::container(const Value& v) const {
  if (v.kind != Kind::list && v.kind != Kind::dict && v.kind != Kind::tuple) return nullptr;
  if (v.ref >= containers_.size()) return nullptr;
  const Container& c = containers_[v.ref];
  return c.generation == static_cast<uint32_t>(v.bits) ? &c : nullptr;
}

const Value* PickleMachine::dict_get(const Container& dict, StringId key) const {
  const auto& items = dict.items;
  for (size_t i = 0; i + 1 < items.size(); i += 2)
    if (items[i].kind == Kind::string && items[i].ref == key) return &items[i + 1];
  return nullptr;
}

void PickleMachine::release(const Value& v, const Value& replacement) {
  if (!container(v)) return;
  Container& c = containers_[v.ref];
  if (c.memo_index < memo_.size() && memo_[c.memo_index].ref == v.ref && memo_[c.memo_index].kind == v.kind)
    memo_[c.memo_index] = replacement;
  items_ -= c.items.size();
  c.items.clear();  // keep the capacity: the slot's next dict reuses it
  c.memo_index = UINT32_MAX;
  ++c.generation;  // any other reference to this slot is now detectably stale
  free_slots_.push_back(v.ref);
}

Value PickleMachine::new_container(Kind kind) {
  uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<uint32_t>(containers_.size());
    containers_.emplace_back();
  }
  Container& c = containers_[slot];
  c.kind = kind;
  Value v;
  v.kind = kind;
  v.ref = slot;
  v.bits = c.generation;
  return v;
}

bool PickleMachine::pop_mark(size_t& mark) {
  if (marks_.empty()) return fail("expected a MARK before this opcode, found none");
  mark = marks_.back();
  marks_.pop_back();
  if (mark > stack_.size()) return fail("corrupt MARK position");
  return true;
}

bool PickleMachine::memo_put(uint64_t index) {
  if (stack_.empty()) return fail("expected a value on the stack to memoize, found an empty stack");
  // Python's pickler numbers memo entries consecutively; refusing gaps bounds memory.
  if (index > memo_.size()) return fail("expected memo index <= " + std::to_string(memo_.size()) +
                                        ", found " + std::to_string(index));
  if (index == memo_.size()) memo_.push_back(stack_.back());
  else memo_[index] = stack_.back();
  const Value& v = stack_.back();
  if (container(v)) containers_[v.ref].memo_index = static_cast<uint32_t>(index);
  return true;
}

bool PickleMachine::memo_get(uint64_t index) {
  if (index >= memo_.size())
    return fail("expected a memo index below " + std::to_string(memo_.size()) + ", found " + std::to_string(index));
  stack_.push_back(memo_[index]);
  return true;
}

bool PickleMachine::fail_short(const std::string& expected) {
  // The reader stops at the end of the data, on a read error, or at its budget.
  if (!reader_.error().empty()) return fail(expected + ": " + reader_.error());
  return fail(expected + ", found the end of the data");
}

bool PickleMachine::read_string(size_t length, bool text) {
  (void)text;  // bytes and text both become interned strings: snapshots only use text
  if (length > kMaxString) return fail("expected a string shorter than 256 MiB, found length " + std::to_string(length));
  if (!reader_.ensure(length))
    return fail_short("expected " + std::to_string(length) + " bytes of string data");
  Value v;
  v.kind = Kind::string;
  v.ref = strings_.intern(std::string_view(reader_.data(), length));
  reader_.consume(length);
  stack_.push_back(v);
  return true;
}

bool PickleMachine::add_to_list(size_t first) {
  if (first == 0) return fail("expected a list below the appended items, found an empty stack");
  const Value target = stack_[first - 1];
  if (target.kind != Kind::list || !container(target))
    return fail("expected a list to append to, found another kind of value");
  if (sink_) {
    for (size_t i = first; i < stack_.size(); ++i) {
      std::string message = sink_->on_append(*this, stack_[i]);
      if (!message.empty()) return fail(std::move(message));
    }
  }
  auto& items = containers_[target.ref].items;  // after the sink: it may have grown containers_
  items.insert(items.end(), stack_.begin() + static_cast<ptrdiff_t>(first), stack_.end());
  items_ += stack_.size() - first;
  stack_.resize(first);
  return true;
}

bool PickleMachine::add_to_dict(size_t first) {
  if (first == 0) return fail("expected a dict below the key/value pairs, found an empty stack");
  if ((stack_.size() - first) % 2 != 0) return fail("expected key/value pairs, found an odd number of items");
  const Value target = stack_[first - 1];
  if (target.kind != Kind::dict || !container(target))
    return fail("expected a dict to set items on, found another kind of value");
  auto& items = containers_[target.ref].items;
  items.insert(items.end(), stack_.begin() + static_cast<ptrdiff_t>(first), stack_.end());
  items_ += stack_.size() - first;
  stack_.resize(first);
  return true;
}

uint64_t PickleMachine::object_bytes() const {
  return sizeof(Value) * (uint64_t(stack_.size()) + memo_.size() + items_) + sizeof(size_t) * marks_.size() +
         sizeof(Container) * uint64_t(containers_.size()) + sizeof(uint32_t) * free_slots_.size();
}

bool PickleMachine::run() {
  uint64_t next_report = 1 << 20;
  for (;;) {
    op_offset_ = reader_.offset();
    if (op_offset_ >= next_report) {
      next_report = op_offset_ + (1 << 20);
      if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) {
        cancelled_ = true;
        return fail("cancelled");
      }
      if (options_.progress) options_.progress(reader_.source().progress());
    }
    // Each opcode adds at most one object (or moves some from the stack), so checking
    // before each one keeps the machine within its limit.
    if (options_.max_object_bytes != 0 && object_bytes() > options_.max_object_bytes)
      return fail("the pickle builds more than " + util::format_bytes(options_.max_object_bytes) +
                  " of objects at once (stack " + std::to_string(stack_.size()) + ", memo " +
                  std::to_string(memo_.size()) + ", containers " + std::to_string(containers_.size()) + " holding " +
                  std::to_string(items_) + " items): the pickle machine's limit, half the input budget "
                  "(set CUDASCOPE_INPUT_BUDGET to raise it)");
    if (!reader_.ensure(1)) {
      if (!reader_.error().empty()) return fail(reader_.error());
      return fail("expected a pickle opcode (the data ends before STOP: truncated file?)");
    }
    const auto op = static_cast<uint8_t>(*reader_.data());
    reader_.consume(1);

    // Fixed-size argument of the opcode, checked once here.
    size_t arg = 0;
    switch (op) {
      case 0x80: case 'K': case 'h': case 'q': case 'U': case 'C': case 0x8a: case 0x8c: arg = 1; break;
      case 'M': arg = 2; break;
      case 'J': case 'j': case 'r': case 'X': case 'T': case 'B': case 0x8b: arg = 4; break;
      case 'G': case 0x95: case 0x8d: case 0x8e: case 0x96: arg = 8; break;
      default: break;
    }
    if (arg && !reader_.ensure(arg))
      return fail_short("expected a " + std::to_string(arg) + "-byte argument for opcode " + hex(op));
    const char* a = reader_.data();
    reader_.consume(arg);

    switch (op) {
      case 0x80:  // PROTO
        if (uint8_t(a[0]) < 2 || uint8_t(a[0]) > 5)
          return fail("expected pickle protocol 2 to 5, found protocol " + std::to_string(uint8_t(a[0])));
        break;
      case 0x95: break;  // FRAME: a length hint only
      case '.': {        // STOP
        if (stack_.size() != 1) return fail("expected exactly one value on the stack at STOP, found " +
                                            std::to_string(stack_.size()));
        result_ = stack_.back();
        return true;
      }
      case '(': marks_.push_back(stack_.size()); break;  // MARK
      case '0':                                          // POP
        if (stack_.empty()) return fail("expected a value to POP, found an empty stack");
        stack_.pop_back();
        break;
      case '1': {  // POP_MARK
        size_t mark;
        if (!pop_mark(mark)) return false;
        stack_.resize(mark);
        break;
      }
      case '2':  // DUP
        if (stack_.empty()) return fail("expected a value to DUP, found an empty stack");
        stack_.push_back(stack_.back());
        break;
      case 'N': stack_.push_back(Value{}); break;
      case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
        Value v;
        v.kind = Kind::boolean;
        v.bits = op == 0x88;
        stack_.push_back(v);
        break;
      }
      case 'J': case 'K': case 'M': {  // BININT, BININT1, BININT2
        Value v;
        v.kind = Kind::integer;
        v.bits = op == 'J' ? int64_t(int32_t(uint32_t(load_le(a, 4)))) : int64_t(load_le(a, op == 'K' ? 1 : 2));
        stack_.push_back(v);
        break;
      }
      case 0x8a: case 0x8b: {  // LONG1, LONG4
        const uint64_t n = load_le(a, op == 0x8a ? 1 : 4);
        if (n > 9) return fail("expected an integer of at most 64 bits, found one of " + std::to_string(n) + " bytes");
        if (!reader_.ensure(n)) return fail_short("expected " + std::to_string(n) + " integer bytes");
        const char* p = reader_.data();
        Value v;
        v.kind = Kind::integer;
        if (n == 9) {
          if (p[8] != 0) return fail("expected an integer of at most 64 bits, found a wider one");
          v.bits = static_cast<int64_t>(load_le(p, 8));
          if (v.bits < 0) v.flags = Value::kUnsigned64;
        } else if (n > 0) {
          uint64_t u = load_le(p, n);
          if (n < 8 && (uint8_t(p[n - 1]) & 0x80)) u |= ~uint64_t{0} << (8 * n);  // sign-extend
          v.bits = static_cast<int64_t>(u);
        }
        reader_.consume(n);
        stack_.push_back(v);
        break;
      }
      case 'G': {  // BINFLOAT: big-endian double
        uint64_t u = 0;
        for (int i = 0; i < 8; ++i) u = (u << 8) | uint8_t(a[i]);
        Value v;
        v.kind = Kind::floating;
        v.bits = static_cast<int64_t>(u);
        stack_.push_back(v);
        break;
      }
      case 'X': case 'T': case 'B': case 0x8c: case 'U': case 'C': case 0x8d: case 0x8e: case 0x96: {
        const size_t n = op == 0x8c || op == 'U' || op == 'C' ? uint8_t(a[0])
                         : (op == 0x8d || op == 0x8e || op == 0x96) ? load_le(a, 8)
                                                                     : load_le(a, 4);
        if (!read_string(n, op == 'X' || op == 0x8c || op == 0x8d)) return false;
        break;
      }
      case '}': stack_.push_back(new_container(Kind::dict)); break;
      case ']': stack_.push_back(new_container(Kind::list)); break;
      case ')': stack_.push_back(new_container(Kind::tuple)); break;
      case 0x8f: stack_.push_back(new_container(Kind::list)); break;  // EMPTY_SET: as a list
      case 'd': case 'l': case 't': case 0x91: {                      // DICT, LIST, TUPLE, FROZENSET
        size_t mark;
        if (!pop_mark(mark)) return false;
        const Kind kind = op == 'd' ? Kind::dict : op == 't' ? Kind::tuple : Kind::list;
        if (kind == Kind::dict && (stack_.size() - mark) % 2 != 0)
          return fail("expected key/value pairs for DICT, found an odd number of items");
        Value v = new_container(kind);
        auto& items = containers_[v.ref].items;
        items.assign(stack_.begin() + static_cast<ptrdiff_t>(mark), stack_.end());
        items_ += items.size();
        stack_.resize(mark);
        stack_.push_back(v);
        break;
      }
      case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
        const size_t n = op - 0x84u;
        if (stack_.size() < n) return fail("expected " + std::to_string(n) + " values for a tuple, found fewer");
        Value v = new_container(Kind::tuple);
        auto& items = containers_[v.ref].items;
        items.assign(stack_.end() - static_cast<ptrdiff_t>(n), stack_.end());
        items_ += n;
        stack_.resize(stack_.size() - n);
        stack_.push_back(v);
        break;
      }
      case 'a':  // APPEND
        if (stack_.size() < 2) return fail("expected a list and a value for APPEND, found fewer");
        if (!add_to_list(stack_.size() - 1)) return false;
        break;
      case 'e': case 0x90: {  // APPENDS, ADDITEMS
        size_t mark;
        if (!pop_mark(mark)) return false;
        if (!add_to_list(mark)) return false;
        break;
      }
      case 's':  // SETITEM
        if (stack_.size() < 3) return fail("expected a dict, a key and a value for SETITEM, found fewer");
        if (!add_to_dict(stack_.size() - 2)) return false;
        break;
      case 'u': {  // SETITEMS
        size_t mark;
        if (!pop_mark(mark)) return false;
        if (!add_to_dict(mark)) return false;
        break;
      }
      case 'h': if (!memo_get(uint8_t(a[0]))) return false; break;        // BINGET
      case 'j': if (!memo_get(load_le(a, 4))) return false; break;        // LONG_BINGET
      case 'q': if (!memo_put(uint8_t(a[0]))) return false; break;        // BINPUT
      case 'r': if (!memo_put(load_le(a, 4))) return false; break;        // LONG_BINPUT
      case 0x94: if (!memo_put(memo_.size())) return false; break;        // MEMOIZE
      default: return op_error(op);
    }
  }
}

}  // namespace cudascope::analysis::detail
