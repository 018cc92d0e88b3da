#pragma once
// Appending JSON text without a DOM: the trace writer's formatting helpers.

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace cudascope::exporters::detail {

inline void append_escaped(std::string& out, std::string_view text) {
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

template <typename Integer>
void append_int(std::string& out, Integer value) {
  char text[24];
  const auto result = std::to_chars(text, text + sizeof text, value);
  out.append(text, result.ptr);
}

// Nanoseconds as microseconds with three decimals (the trace's unit, at full precision).
inline void append_us(std::string& out, std::uint64_t ns) {
  append_int(out, ns / 1000);
  const unsigned frac = static_cast<unsigned>(ns % 1000);
  out += '.';
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + frac / 10 % 10);
  out += static_cast<char>('0' + frac % 10);
}

}  // namespace cudascope::exporters::detail
