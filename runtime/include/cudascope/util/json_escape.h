#pragma once
// The one JSON string escaper: writers that build JSON text without a DOM (the Chrome
// trace writer, the snapshot JSON writer, stats --json, rank summaries) append strings
// through it, so every file cudascope writes escapes the same way and is always JSON.

#include <cstddef>
#include <string>
#include <string_view>

namespace cudascope::util {

// Length of the well-formed UTF-8 sequence at text[i] (1 to 4), or 0 when the bytes there
// are not one: a stray continuation byte, an overlong form, a surrogate (ED A0..BF, as a
// decoder keeping lone "\ud800" halves writes them), a code point past U+10FFFF, or a
// sequence cut short. Bytes below 0x80 are sequences of length 1.
inline size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) n = 2;
  else if (c == 0xe0) n = 3, lo = 0xa0;
  else if (c == 0xed) n = 3, hi = 0x9f;  // excludes the surrogates U+D800..U+DFFF
  else if (c >= 0xe1 && c <= 0xef) n = 3;
  else if (c == 0xf0) n = 4, lo = 0x90;
  else if (c >= 0xf1 && c <= 0xf3) n = 4;
  else if (c == 0xf4) n = 4, hi = 0x8f;  // nothing past U+10FFFF
  else return 0;
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return n;
}

// True when `text` is well-formed UTF-8 throughout.
inline bool is_valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

// Appends `text` to `out` as a JSON string, quotes included: '"' and '\' escaped,
// \n \r \t by name, other control characters as \u00XX. Well-formed UTF-8 passes through;
// each byte that is not part of a well-formed sequence (invalid UTF-8, an encoded lone
// surrogate) becomes U+FFFD, so the output is valid JSON (RFC 8259 text is UTF-8) whatever
// the input held.
inline void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[(c >> 4) & 0xf];
          out += kHex[c & 0xf];
        } else if (static_cast<unsigned char>(c) >= 0x80) {
          const size_t n = utf8_sequence_length(text, i);
          if (n == 0) {
            out += "\xef\xbf\xbd";  // U+FFFD REPLACEMENT CHARACTER
          } else {
            out.append(text.data() + i, n);
            i += n;
            continue;
          }
        } else {
          out += c;
        }
    }
    ++i;
  }
  out += '"';
}

}  // namespace cudascope::util
