#pragma once
// Shared by the snapshot tests: fixture paths and the figures Python computed for them.

#include <cudascope/analysis/loader.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace cudascope::analysis::testing {

inline std::string data_path(const std::string& name) { return std::string(CUDASCOPE_TEST_DATA) + "/" + name; }

inline nlohmann::json expected_stats(const std::string& name) {
  std::ifstream in(data_path(name));
  return nlohmann::json::parse(in);
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Loads a fixture, failing the test with the loader's message if it does not load.
inline Snapshot load_fixture(const std::string& name) {
  auto result = load_snapshot(data_path(name));
  if (!result) {
    ADD_FAILURE() << result.error().message();
    return Snapshot{};
  }
  return std::move(result).value();
}

}  // namespace cudascope::analysis::testing
