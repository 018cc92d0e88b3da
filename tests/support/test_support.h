#pragma once
// Shared by the runtime tests: the backend under test and skipping GPU-only tests.

#include <cudascope/cuda.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <thread>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace cudascope::testing {

// Tests run on the sim backend unless CUDASCOPE_BACKEND says otherwise (the GPU machine
// runs the same suite with CUDASCOPE_BACKEND=cuda). Call before the runtime is used.
inline void default_to_sim_backend() { setenv("CUDASCOPE_BACKEND", "sim", /*overwrite=*/0); }

inline bool on_cuda_backend() { return cuda::backend_name() == "cuda"; }

// A new, empty directory of this test's own under the system's temporary directory, its
// name starting with `prefix` (mkdtemp); empty when none could be made.
inline std::string make_temporary_directory(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  return mkdtemp(pattern.data()) != nullptr ? pattern : std::string();
}

// A test that needs a second process runs its own executable with a flag; the flag's
// handler runs instead of the tests and its return value is the exit code.
struct ChildMode {
  std::string flag;
  int (*run)(int argc, char** argv);
};
struct ChildModeRegistrar {
  ChildModeRegistrar(const char* flag, int (*run)(int argc, char** argv));
};

// Runs this test executable with `args` (and extra environment "K=V" entries), returning
// the exit status and what it printed on stdout.
struct ChildResult {
  int exit_code = -1;
  std::string output;
};
ChildResult run_self(const std::vector<std::string>& args, const std::vector<std::string>& extra_env = {});

}  // namespace cudascope::testing

// For tests of the simulated device's own model: their executables are registered with
// CUDASCOPE_BACKEND=sim, so they run (never skip) wherever the suite runs, GPU machines too.
#define CUDASCOPE_REQUIRE_SIM_BACKEND()                                                        \
  ASSERT_EQ(::cudascope::cuda::backend_name(), "sim")                                          \
      << "a sim-model test: run it with CUDASCOPE_BACKEND=sim (its ctest registration sets it)"

// Skips (never passes) a test that needs a real GPU when the backend is not cuda or has no device.
#define CUDASCOPE_REQUIRE_GPU()                                                                 \
  do {                                                                                          \
    if (!::cudascope::testing::on_cuda_backend() || !::cudascope::cuda::is_available()) {       \
      GTEST_SKIP() << "needs a GPU: run with CUDASCOPE_BACKEND=cuda on a machine with a device"; \
    }                                                                                           \
  } while (0)

// Skips a test that needs at least `n` devices.
#define CUDASCOPE_REQUIRE_DEVICES(n)                                                                  \
  do {                                                                                                \
    if (::cudascope::cuda::device_count() < (n)) {                                                   \
      GTEST_SKIP() << "needs " << (n) << " devices, the " << ::cudascope::cuda::backend_name()        \
                   << " backend has " << ::cudascope::cuda::device_count();                           \
    }                                                                                                 \
  } while (0)
