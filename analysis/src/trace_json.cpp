#include "trace_json.h"

#include "byte_order_mark.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace cudascope::analysis::detail {
namespace {

// Deeper nesting than any trace has; the bound keeps the recursion's stack small.
constexpr int kMaxDepth = 256;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void append_utf8(std::string& out, std::uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xc0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xe0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (code & 0x3f));
  }
}

}  // namespace

JsonCursor::JsonCursor(util::ByteReader& reader) : reader_(reader) {
  p_ = reader_.data();
  e_ = p_ + reader_.available();
}

bool JsonCursor::refill() {
  reader_.consume(static_cast<std::size_t>(p_ - reader_.data()));
  const bool more = reader_.ensure(reader_.available() + 1);
  p_ = reader_.data();
  e_ = p_ + reader_.available();
  return more || p_ < e_;
}

void JsonCursor::skip_byte_order_mark() {
  reader_.consume(static_cast<std::size_t>(p_ - reader_.data()));
  detail::skip_byte_order_mark(reader_);
  p_ = reader_.data();
  e_ = p_ + reader_.available();
}

JsonStatus JsonCursor::fail(std::string message) {
  if (message_.empty()) {
    message_ = std::move(message);
    error_offset_ = offset();
  }
  return JsonStatus::syntax;
}

JsonStatus JsonCursor::expect(char c, const char* what) {
  const int next = peek_token();
  if (next < 0) return JsonStatus::end;
  if (next != static_cast<unsigned char>(c)) return fail(std::string("expected ") + what);
  ++p_;
  return JsonStatus::ok;
}

JsonStatus JsonCursor::read_string(std::string& out) {
  out.clear();
  const int next = peek_token();
  if (next < 0) return JsonStatus::end;
  if (next != '"') return fail("expected a string");
  ++p_;
  return string_body(&out, true);
}

// After the opening quote. decode: escapes become their characters; else `out` gets the
// text as written plus the closing quote (the caller wrote the opening one).
JsonStatus JsonCursor::string_body(std::string* out, bool decode) {
  for (;;) {
    const char* start = p_;
    while (p_ < e_) {
      const char c = *p_;
      if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) break;
      ++p_;
    }
    if (out != nullptr) out->append(start, static_cast<std::size_t>(p_ - start));
    if (p_ == e_) {
      if (!refill()) return JsonStatus::end;
      continue;
    }
    const char c = *p_;
    if (c == '"') {
      ++p_;
      if (out != nullptr && !decode) *out += '"';
      return JsonStatus::ok;
    }
    if (c != '\\') return fail("control character inside a string");
    // An escape: make sure its whole text is in the window.
    if (e_ - p_ < 6) {
      const std::size_t have = static_cast<std::size_t>(e_ - p_);
      reader_.consume(static_cast<std::size_t>(p_ - reader_.data()));
      reader_.ensure(6);
      p_ = reader_.data();
      e_ = p_ + reader_.available();
      if (static_cast<std::size_t>(e_ - p_) < 2 || static_cast<std::size_t>(e_ - p_) < have) return JsonStatus::end;
    }
    const char kind = p_[1];
    char plain = 0;
    switch (kind) {
      case '"': plain = '"'; break;
      case '\\': plain = '\\'; break;
      case '/': plain = '/'; break;
      case 'b': plain = '\b'; break;
      case 'f': plain = '\f'; break;
      case 'n': plain = '\n'; break;
      case 'r': plain = '\r'; break;
      case 't': plain = '\t'; break;
      case 'u': break;
      default: ++p_; return fail("unknown escape in a string");
    }
    if (kind != 'u') {
      if (out != nullptr) {
        if (decode) *out += plain;
        else out->append(p_, 2);
      }
      p_ += 2;
      continue;
    }
    if (e_ - p_ < 6) return JsonStatus::end;
    std::uint32_t code = 0;
    for (int i = 2; i < 6; ++i) {
      const int h = hex_value(p_[i]);
      if (h < 0) {
        p_ += i;
        return fail("bad \\u escape in a string");
      }
      code = code * 16 + static_cast<std::uint32_t>(h);
    }
    if (out != nullptr) {
      if (decode) append_utf8(*out, code);  // surrogate halves are kept as they come
      else out->append(p_, 6);
    }
    p_ += 6;
  }
}

JsonStatus JsonCursor::read_number_text(std::string& out) {
  out.clear();
  if (peek_token() < 0) return JsonStatus::end;
  const std::uint64_t start = offset();
  const auto fail = [&](const char* why) {  // errors point at the number's first byte
    const JsonStatus s = this->fail(why);
    error_offset_ = start;
    return s;
  };
  for (;;) {
    const char* start = p_;
    while (p_ < e_) {
      const char c = *p_;
      if (!(is_digit(c) || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) break;
      ++p_;
    }
    out.append(start, static_cast<std::size_t>(p_ - start));
    if (p_ < e_) break;
    if (!refill()) {
      // A number that runs into the end of the input may have lost digits: not trusted.
      return JsonStatus::end;
    }
  }
  // JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  std::size_t i = 0;
  if (i < out.size() && out[i] == '-') ++i;
  if (i >= out.size() || !is_digit(out[i])) return fail("expected a number");
  if (out[i] == '0' && i + 1 < out.size() && is_digit(out[i + 1])) return fail("a number with a leading zero");
  while (i < out.size() && is_digit(out[i])) ++i;
  if (i < out.size() && out[i] == '.') {
    ++i;
    if (i >= out.size() || !is_digit(out[i])) return fail("a number without digits after '.'");
    while (i < out.size() && is_digit(out[i])) ++i;
  }
  if (i < out.size() && (out[i] == 'e' || out[i] == 'E')) {
    ++i;
    if (i < out.size() && (out[i] == '+' || out[i] == '-')) ++i;
    if (i >= out.size() || !is_digit(out[i])) return fail("a number without exponent digits");
    while (i < out.size() && is_digit(out[i])) ++i;
  }
  if (i != out.size()) return fail("malformed number");
  return JsonStatus::ok;
}

JsonStatus JsonCursor::literal(std::string_view word, std::string* out) {
  for (const char expected : word) {
    if (p_ == e_ && !refill()) return JsonStatus::end;
    if (*p_ != expected) return fail("expected a JSON value");
    ++p_;
  }
  if (out != nullptr) out->append(word);
  return JsonStatus::ok;
}

JsonStatus JsonCursor::skip_value() { return value(nullptr, 0); }
JsonStatus JsonCursor::capture_value(std::string& out) { return value(&out, 0); }

JsonStatus JsonCursor::value(std::string* out, int depth) {
  if (depth > kMaxDepth) return fail("values nested too deeply");
  const int c = peek_token();
  if (c < 0) return JsonStatus::end;
  switch (c) {
    case '"':
      ++p_;
      if (out != nullptr) *out += '"';
      return string_body(out, false);
    case '{':
    case '[': {
      const bool object = c == '{';
      const char close = object ? '}' : ']';
      ++p_;
      if (out != nullptr) *out += static_cast<char>(c);
      int next = peek_token();
      if (next < 0) return JsonStatus::end;
      if (next == close) {
        ++p_;
        if (out != nullptr) *out += close;
        return JsonStatus::ok;
      }
      for (;;) {
        if (object) {
          next = peek_token();
          if (next < 0) return JsonStatus::end;
          if (next != '"') return fail("expected a member name");
          ++p_;
          if (out != nullptr) *out += '"';
          if (JsonStatus s = string_body(out, false); s != JsonStatus::ok) return s;
          if (JsonStatus s = expect(':', "':' after a member name"); s != JsonStatus::ok) return s;
          if (out != nullptr) *out += ':';
        }
        if (JsonStatus s = value(out, depth + 1); s != JsonStatus::ok) return s;
        next = peek_token();
        if (next < 0) return JsonStatus::end;
        ++p_;
        if (next == close) {
          if (out != nullptr) *out += close;
          return JsonStatus::ok;
        }
        if (next != ',') {
          --p_;
          return fail(object ? "expected ',' or '}'" : "expected ',' or ']'");
        }
        if (out != nullptr) *out += ',';
      }
    }
    case 't': return literal("true", out);
    case 'f': return literal("false", out);
    case 'n': return literal("null", out);
    default:
      if (c == '-' || is_digit(static_cast<char>(c))) {
        std::string number;
        if (JsonStatus s = read_number_text(number); s != JsonStatus::ok) return s;
        if (out != nullptr) out->append(number);
        return JsonStatus::ok;
      }
      return fail("expected a JSON value");
  }
}

bool parse_microseconds_as_ns(std::string_view text, std::int64_t& ns) {
  std::size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (negative) ++i;
  std::int64_t whole = 0;
  std::size_t digits = 0;
  while (i < text.size() && is_digit(text[i])) {
    if (++digits > 18) break;  // past 18 digits whole * 10 could overflow: take the slow path
    whole = whole * 10 + (text[i] - '0');
    ++i;
  }
  if (digits == 0) return false;
  // Epoch microseconds have 16 digits (Kineto before 2024 wrote them so, as integers): a
  // double holds them, but not times 1000, so they stay integers here. The bound admits values
  // of 16 digits (up to 9223372036854774 us), no more: larger times do not fit in nanoseconds.
  // A loop stopped past 18 digits leaves `i` on a digit, which the test of `i` refuses.
  if (whole <= (INT64_MAX - 1000) / 1000 && (i == text.size() || text[i] == '.')) {
    std::int64_t fraction = 0;
    int scale = 0;
    bool round_up = false;
    if (i < text.size()) {
      ++i;
      if (i == text.size()) return false;
      while (i < text.size() && is_digit(text[i])) {
        if (scale < 3) {
          fraction = fraction * 10 + (text[i] - '0');
          ++scale;
        } else if (scale == 3) {
          round_up = text[i] >= '5';
          ++scale;
        }
        ++i;
      }
      if (i != text.size()) goto slow;  // an exponent
    }
    while (scale < 3) {
      fraction *= 10;
      ++scale;
    }
    const std::int64_t value = whole * 1000 + fraction + (round_up ? 1 : 0);
    ns = negative ? -value : value;
    return true;
  }
slow:
  double us = 0;
  if (!parse_double(text, us) || !std::isfinite(us) || std::fabs(us) > 9.2e15) return false;
  ns = static_cast<std::int64_t>(std::llround(us * 1000.0));
  return true;
}

bool parse_integer(std::string_view text, std::int64_t& value) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && end == text.data() + text.size()) return true;
  double number = 0;
  if (!parse_double(text, number) || !std::isfinite(number) || number != std::floor(number) || std::fabs(number) > 9.2e18)
    return false;
  value = static_cast<std::int64_t>(number);
  return true;
}

bool parse_double(std::string_view text, double& value) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace cudascope::analysis::detail
