#pragma once
// How much a volume test does (rounds, operations): the positive count in environment
// variable `name`, else `fallback`. The sanitizer runs ask for less (.ci/sanitizers.sh): the
// same paths at a fraction of the volume, where each step costs several times as much.

#include <cstdlib>

namespace cudascope::testing {

inline int volume_from_env(const char* name, int fallback) {
  const char* text = std::getenv(name);
  const int value = text != nullptr ? std::atoi(text) : 0;
  return value > 0 ? value : fallback;
}

}  // namespace cudascope::testing
