#pragma once
// A streaming JSON tokenizer over util::ByteReader for the trace loader: it walks the text
// once, never holding more than the reader's window, decodes the few strings the model
// keeps, copies "args" values minified, and skips the rest while still checking that it
// is JSON. Errors carry the byte offset where the text stopped being what was expected.
//
// Thread-safety: none; one cursor per reader.

#include <cudascope/util/byte_source.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace cudascope::analysis::detail {

enum class JsonStatus : std::uint8_t {
  ok,
  end,     // the input ended (cleanly or not: see JsonCursor::input_error())
  syntax,  // not JSON here: JsonCursor::message() and error_offset() say why and where
};

class JsonCursor {
 public:
  explicit JsonCursor(util::ByteReader& reader);

  // The next byte after whitespace, not consumed; -1 when the input ends.
  int peek_token() {
    for (;;) {
      while (p_ < e_) {
        const char c = *p_;
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
          ++p_;
          continue;
        }
        return static_cast<unsigned char>(c);
      }
      if (!refill()) return -1;
    }
  }
  void advance() { ++p_; }  // after peek_token() returned a byte
  // Consumes a UTF-8 byte-order mark at the cursor (byte_order_mark.h): call where the text starts.
  void skip_byte_order_mark();
  // Consumes the rest of the input unread (its source still checks its own end).
  void skip_to_end() {
    do p_ = e_;
    while (refill());
  }
  // Consumes `c` (after whitespace) or fails with "expected <what>".
  JsonStatus expect(char c, const char* what);

  // A string at the cursor, escapes decoded, into `out` (replaced).
  JsonStatus read_string(std::string& out);
  // A number's text at the cursor into `out` (replaced), checked to be a JSON number.
  JsonStatus read_number_text(std::string& out);
  // Any value, checked and dropped.
  JsonStatus skip_value();
  // Any value, appended to `out` without whitespace (strings as written, escapes kept).
  JsonStatus capture_value(std::string& out);

  // Stream offset of the next unread byte.
  std::uint64_t offset() const { return reader_.offset() + static_cast<std::uint64_t>(p_ - reader_.data()); }
  const std::string& message() const { return message_; }
  std::uint64_t error_offset() const { return error_offset_; }
  // Why the input ended early ("" at a plain end of data): the source's or the budget's error.
  const std::string& input_error() const { return reader_.error(); }
  JsonStatus fail(std::string message);

 private:
  bool refill();
  JsonStatus value(std::string* out, int depth);
  JsonStatus string_body(std::string* out, bool decode);
  JsonStatus literal(std::string_view word, std::string* out);

  util::ByteReader& reader_;
  const char* p_ = nullptr;
  const char* e_ = nullptr;
  std::string message_;
  std::uint64_t error_offset_ = 0;
};

// Trace times are microseconds written as decimals ("1234.567"); this gives nanoseconds
// without going through a double for up to 16 integer digits (whole microseconds up to
// (INT64_MAX - 1000) / 1000, every epoch time; exact to the ns), rounding further fraction
// digits half away from zero. False when `text` is not a number or its nanoseconds do not
// fit in 64 bits.
bool parse_microseconds_as_ns(std::string_view text, std::int64_t& ns);
// An integer ("12", "-3", also "12.0" or "1e3" when whole). False otherwise.
bool parse_integer(std::string_view text, std::int64_t& value);
// Any JSON number. False otherwise.
bool parse_double(std::string_view text, double& value);

}  // namespace cudascope::analysis::detail
