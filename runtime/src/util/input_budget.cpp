#include <cudascope/util/input_budget.h>
#include <cudascope/util/byte_format.h>
#include <cudascope/util/env_value.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <sys/resource.h>
#include <unistd.h>

namespace cudascope::util {

uint64_t input_budget() {
  if (const auto env = env_text("CUDASCOPE_INPUT_BUDGET")) {
    uint64_t bytes = 0;
    if (!parse_byte_size(*env, bytes) || bytes == 0)
      throw EnvError(env_shown("CUDASCOPE_INPUT_BUDGET", *env) + " is not a byte size such as 512MiB, 8GiB or 1048576");
    return bytes;
  }
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  uint64_t budget = pages > 0 && page_size > 0 ? uint64_t(pages) * uint64_t(page_size) / 4 : uint64_t(4) << 30;
  rlimit limit{};
  if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    budget = std::min<uint64_t>(budget, uint64_t(limit.rlim_cur) / 4);
  return budget;
}

std::string budget_exceeded_message(uint64_t budget_bytes) {
  const uint64_t mib = budget_bytes >> 20;
  const std::string amount =
      mib > 0 ? std::to_string(mib) + " MiB" : std::to_string(budget_bytes) + " byte";
  return "input exceeds the " + amount + " budget (set CUDASCOPE_INPUT_BUDGET to raise it)";
}

}  // namespace cudascope::util
