// main() for cudascope's GoogleTest programs: the sim backend unless CUDASCOPE_BACKEND is
// set, and child-process modes registered by tests that need a second process.
#include "test_support.h"

#include <gmock/gmock.h>

namespace cudascope::testing {
namespace {
std::vector<ChildMode>& child_modes() {
  static std::vector<ChildMode> modes;
  return modes;
}
}  // namespace

ChildModeRegistrar::ChildModeRegistrar(const char* flag, int (*run)(int argc, char** argv)) {
  child_modes().push_back({flag, run});
}

}  // namespace cudascope::testing

int main(int argc, char** argv) {
  cudascope::testing::default_to_sim_backend();
  if (argc >= 2) {
    for (const auto& mode : cudascope::testing::child_modes()) {
      if (std::string(argv[1]) == mode.flag) return mode.run(argc, argv);
    }
  }
  ::testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}
