#pragma once
// The one JSON string escaper: writers that build JSON text without a DOM (the Chrome
// trace writer, the snapshot JSON writer) append strings through it, so every file
// cudascope writes escapes the same way.

#include <string>
#include <string_view>

namespace cudascope::util {

// Appends `text` to `out` as a JSON string, quotes included: '"' and '\' escaped,
// \n \r \t by name, other control characters as \u00XX. Bytes >= 0x80 pass through
// unchanged (the text is taken to be UTF-8).
inline void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
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
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace cudascope::util
