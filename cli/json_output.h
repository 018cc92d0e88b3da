#pragma once
// The text of a command's --json output. Names in a snapshot or trace may hold bytes that are
// not UTF-8 (a kernel or frame name is whatever the program gave): each such byte becomes
// U+FFFD, as util::json_escape does for the hand-written writers, so the output is JSON.
#include <nlohmann/json.hpp>

#include <string>

namespace cudascope::cli {

inline std::string json_text(const nlohmann::json& value) {
  return value.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cudascope::cli
