#pragma once
// Appending JSON text without a DOM: the trace writer's formatting helpers.

#include <cudascope/util/json_escape.h>

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace cudascope::exporters::detail {

// The one JSON string escaper (quotes included).
using util::append_json_string;

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
