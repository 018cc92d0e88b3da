// torch.cuda.memory_summary's table, character for character.
#include <cudascope/cuda/memory.h>
#include <cudascope/util/byte_format.h>

#include <cstdio>
#include <string>
#include <vector>

namespace cudascope::cuda {
namespace {

// PyTorch's _format_size.
std::string format_size(std::int64_t size, double reference) { return util::format_summary_size(size, reference); }

std::string format_count(std::int64_t count, double reference) {
  static const char* const prefixes[] = {" ", "K", "M"};
  int prefix = 0;
  for (int next = 1; next < 3; ++next) {
    if (reference < 750 * 1000) break;
    prefix = next;
    count /= 1000;
    reference /= 1000;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%7lld %s ", static_cast<long long>(count), prefixes[prefix]);
  return text;
}

std::string pad_right(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

}  // namespace

std::string format_memory_summary(const std::map<std::string, std::int64_t>& stats, int device, bool abbreviated) {
  auto get = [&](const std::string& key) {
    auto it = stats.find(key);
    return it == stats.end() ? std::int64_t{0} : it->second;
  };
  using Formatter = std::string (*)(std::int64_t, double);
  struct Metric {
    const char* key;
    const char* name;
    Formatter format;
  };
  const Metric metrics[] = {
      {"allocated_bytes", "Allocated memory", format_size},   {"active_bytes", "Active memory", format_size},
      {"requested_bytes", "Requested memory", format_size},   {"reserved_bytes", "GPU reserved memory", format_size},
      {"inactive_split_bytes", "Non-releasable memory", format_size}, {"allocation", "Allocations", format_count},
      {"active", "Active allocs", format_count},              {"segment", "GPU reserved segments", format_count},
      {"inactive_split", "Non-releasable allocs", format_count},
  };
  std::vector<std::string> lines;
  const std::string rule(75, '='), thin(75, '-');
  lines.push_back(rule);
  lines.push_back(" " + std::string(16, ' ') + " PyTorch CUDA memory summary, device ID " +
                  pad_right(std::to_string(device), 17) + " ");
  lines.push_back(thin);
  lines.push_back("  " + std::string(9, ' ') + " CUDA OOMs: " + pad_right(std::to_string(get("num_ooms")), 12) + " | " +
                  std::string(6, ' ') + " cudaMalloc retries: " + pad_right(std::to_string(get("num_alloc_retries")), 8) +
                  "  ");
  lines.push_back(rule);
  lines.push_back("        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  ");
  for (const Metric& m : metrics) {
    lines.push_back(thin);
    std::vector<std::pair<std::string, std::string>> rows = {{"all", m.name}};
    if (!abbreviated) {
      rows.emplace_back("large_pool", "      from large pool");
      rows.emplace_back("small_pool", "      from small pool");
    }
    double ref[4] = {0, 0, 0, 0};
    bool first = true;
    for (const auto& [pool, name] : rows) {
      const std::string prefix = std::string(m.key) + "." + pool + ".";
      const std::int64_t v[4] = {get(prefix + "current"), get(prefix + "peak"), get(prefix + "allocated"),
                                 get(prefix + "freed")};
      if (first) {
        for (int i = 0; i < 4; ++i) ref[i] = static_cast<double>(v[i]);
        first = false;
      }
      lines.push_back(" " + pad_right(name, 21) + " | " + m.format(v[0], ref[0]) + " | " + m.format(v[1], ref[1]) +
                      " | " + m.format(v[2], ref[2]) + " | " + m.format(v[3], ref[3]) + " ");
    }
  }
  for (const auto& [key, name] : {std::pair{"oversize_allocations", "Oversize allocations"},
                                  std::pair{"oversize_segments", "Oversize GPU segments"}}) {
    lines.push_back(thin);
    const std::string prefix = std::string(key) + ".";
    const std::int64_t v[4] = {get(prefix + "current"), get(prefix + "peak"), get(prefix + "allocated"),
                               get(prefix + "freed")};
    std::string line = " " + pad_right(name, 21);
    for (std::int64_t value : v) line += " | " + format_count(value, static_cast<double>(value));
    lines.push_back(line + " ");
  }
  lines.push_back(rule);
  std::string out;
  for (const auto& line : lines) out += "|" + line + "|\n";
  return out;
}

}  // namespace cudascope::cuda
