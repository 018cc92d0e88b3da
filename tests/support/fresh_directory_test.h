#pragma once
// A test fixture with a directory of its own, made empty before each test and removed after:
// the files a command writes there are exactly what the test made it write.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

namespace cudascope::testing {

class FreshDirectoryTest : public ::testing::Test {
 protected:
  // `prefix` names the directory after the suite (several suites may run at once).
  explicit FreshDirectoryTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           (prefix_ + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::set<std::string> files() const {
    std::set<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) names.insert(entry.path().filename().string());
    return names;
  }
  std::filesystem::path dir_;

 private:
  std::string prefix_;
};

}  // namespace cudascope::testing
