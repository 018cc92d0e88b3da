#include <cudascope/profiler/activities.h>

#include <stdexcept>

namespace cudascope::profiler {
namespace {
constexpr const char* kNames[] = {"kernel", "memcpy", "memset", "sync", "runtime", "driver", "nvtx", "allocator", "overhead", "launch"};
static_assert(sizeof kNames / sizeof kNames[0] == static_cast<std::size_t>(Activity::kCount));

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}
}  // namespace

const char* to_string(Activity a) noexcept {
  const auto index = static_cast<std::size_t>(a);
  return index < static_cast<std::size_t>(Activity::kCount) ? kNames[index] : "?";
}

ActivitySet ActivitySet::defaults() {
  return all().remove(Activity::kDriver).remove(Activity::kRuntime).remove(Activity::kSync);
}

ActivitySet ActivitySet::metrics_only_defaults() {
  return defaults().remove(Activity::kLaunch);
}

ActivitySet ActivitySet::all() {
  ActivitySet set;
  for (unsigned i = 0; i < static_cast<unsigned>(Activity::kCount); ++i) set.add(static_cast<Activity>(i));
  return set;
}

ActivitySet ActivitySet::parse(std::string_view list, const ActivitySet& defaults) {
  ActivitySet set;
  std::size_t position = 0;
  while (position <= list.size()) {
    const std::size_t comma = list.find(',', position);
    const std::string_view item = trim(list.substr(position, comma == std::string_view::npos ? std::string_view::npos : comma - position));
    position = comma == std::string_view::npos ? list.size() + 1 : comma + 1;
    if (item.empty()) continue;
    if (item == "all") {
      set = all();
      continue;
    }
    if (item == "default") {
      for (unsigned i = 0; i < static_cast<unsigned>(Activity::kCount); ++i) {
        if (defaults.contains(static_cast<Activity>(i))) set.add(static_cast<Activity>(i));
      }
      continue;
    }
    bool known = false;
    for (unsigned i = 0; i < static_cast<unsigned>(Activity::kCount); ++i) {
      if (item == kNames[i]) {
        set.add(static_cast<Activity>(i));
        known = true;
      }
    }
    if (!known) {
      std::string valid;
      for (const char* name : kNames) valid += std::string(name) + ", ";
      throw std::invalid_argument("activity '" + std::string(item) + "' is not one of: " + valid + "all, default");
    }
  }
  if (set.empty()) throw std::invalid_argument("activity list '" + std::string(list) + "' names no activity");
  return set;
}

std::string ActivitySet::to_string() const {
  std::string out;
  for (unsigned i = 0; i < static_cast<unsigned>(Activity::kCount); ++i) {
    if (!contains(static_cast<Activity>(i))) continue;
    if (!out.empty()) out += ',';
    out += kNames[i];
  }
  return out;
}

}  // namespace cudascope::profiler
