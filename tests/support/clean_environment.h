#pragma once
// Tests whose results must not depend on the environment they were started from: the
// runtime's variables (CUDASCOPE_*, PYTORCH_CUDA_ALLOC_CONF, and the injection paths that
// CUDASCOPE_TRACE sets) are unset while the tests run and put back afterwards, and what a
// test needs it sets through the same object, which restores the previous value too.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <string>

extern char** environ;

namespace cudascope::testing {

class CleanEnvironment {
 public:
  // Unsets the variables above except those named in `keep` (e.g. CUDASCOPE_BACKEND, which
  // picks the backend a suite runs on).
  explicit CleanEnvironment(const std::set<std::string>& keep = {}) {
    std::set<std::string> names{"PYTORCH_CUDA_ALLOC_CONF", "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH"};
    for (char** entry = environ; *entry != nullptr; ++entry) {
      const std::string text = *entry;
      if (text.rfind("CUDASCOPE_", 0) == 0) names.insert(text.substr(0, text.find('=')));
    }
    for (const auto& name : names) {
      if (keep.count(name) == 0) unset(name);
    }
  }
  ~CleanEnvironment() {
    for (const auto& [name, value] : saved_) {
      if (value) {
        setenv(name.c_str(), value->c_str(), 1);
      } else {
        unsetenv(name.c_str());
      }
    }
  }
  CleanEnvironment(const CleanEnvironment&) = delete;
  CleanEnvironment& operator=(const CleanEnvironment&) = delete;

  void set(const std::string& name, const std::string& value) {
    remember(name);
    setenv(name.c_str(), value.c_str(), 1);
  }
  void unset(const std::string& name) {
    remember(name);
    unsetenv(name.c_str());
  }

 private:
  // The value before this object first touched `name` (nullopt: it was not set).
  void remember(const std::string& name) {
    if (saved_.count(name) != 0) return;
    const char* value = std::getenv(name.c_str());
    saved_[name] = value ? std::optional<std::string>(value) : std::nullopt;
  }

  std::map<std::string, std::optional<std::string>> saved_;
};

// The same for a whole test program: register with
// ::testing::AddGlobalTestEnvironment(new CleanEnvironmentForAllTests(keep)).
class CleanEnvironmentForAllTests : public ::testing::Environment {
 public:
  explicit CleanEnvironmentForAllTests(std::set<std::string> keep = {}) : keep_(std::move(keep)) {}
  void SetUp() override { clean_.emplace(keep_); }
  void TearDown() override { clean_.reset(); }

 private:
  std::set<std::string> keep_;
  std::optional<CleanEnvironment> clean_;
};

}  // namespace cudascope::testing
