#include <cudascope/util/byte_format.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cudascope::util {

std::string format_size(uint64_t bytes) {
  char text[64];
  if (bytes <= 1024) {
    std::snprintf(text, sizeof text, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else if (bytes <= 1048576) {
    std::snprintf(text, sizeof text, "%.2f KiB", static_cast<double>(bytes) / 1024.0);
  } else if (bytes <= 1073741824ULL) {
    std::snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(bytes) / 1048576.0);
  } else {
    std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  }
  return text;
}

std::string format_summary_size(int64_t bytes, double reference) {
  static const char* const prefixes[] = {"B  ", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int prefix = 0;
  for (int next = 1; next < 6; ++next) {
    if (reference < 768 * 1024) break;
    prefix = next;
    bytes /= 1024;  // Python's floor division on non-negative values
    reference /= 1024;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%6lld %s", static_cast<long long>(bytes), prefixes[prefix]);
  return text;
}

std::string format_bytes(uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) value /= 1024.0, ++unit;
  char text[64];
  if (unit == 0) std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(text, sizeof text, "%.2f %s", value, units[unit]);
  return text;
}

bool parse_byte_size(const std::string& text, uint64_t& bytes) {
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isdigit(static_cast<unsigned char>(text[0])) || !std::isfinite(value)) return false;
  std::string unit(end);
  while (!unit.empty() && unit.front() == ' ') unit.erase(0, 1);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // Binary units whatever the spelling: "16G", "16GB" and "16GiB" all mean 16 << 30.
  static const char* const kUnits[] = {"b", "k", "m", "g", "t"};
  double scale = unit.empty() ? 1.0 : 0.0;
  for (int i = 0; i < 5 && scale == 0.0; ++i) {
    const std::string u = kUnits[i];
    if (unit == u || (i > 0 && (unit == u + "b" || unit == u + "ib"))) scale = std::ldexp(1.0, 10 * i);
  }
  if (scale == 0.0 || value * scale >= 18446744073709551615.0) return false;
  bytes = static_cast<uint64_t>(value * scale);
  return true;
}

}  // namespace cudascope::util
