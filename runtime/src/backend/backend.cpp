// Backend selection: CUDASCOPE_BACKEND=cuda|sim|auto, read once.
#include "backend.h"

#include "../check.h"

#include <cudascope/util/env_value.h>

#include <cstdlib>
#include <mutex>
#include <string>

namespace cudascope::cuda::detail {
namespace {

std::unique_ptr<Backend> select_backend() {
  std::string choice = "cuda";
  try {
    choice = util::env_backend().value_or("cuda");  // set but empty is not "unset"
  } catch (const util::EnvError& e) {
    throw_error(error_code::kInvalidValue, "CUDASCOPE_BACKEND", __FILE__, __LINE__, e.what());
  }
  if (choice == "sim") return make_sim_backend();
  if (choice == "cuda" || choice == "auto") {
    if (choice == "auto" && !cuda_backend_has_device()) return make_sim_backend();
    std::unique_ptr<Backend> cuda = make_cuda_backend();
    if (cuda) return cuda;
    if (choice == "auto") return make_sim_backend();
    throw_error(error_code::kInitializationError, "CUDASCOPE_BACKEND", __FILE__, __LINE__,
                "CUDASCOPE_BACKEND=cuda, but this build of cudascope has no cuda backend (use sim or auto)");
  }
  return make_sim_backend();  // not reached: env_backend() takes only the three
}

}  // namespace

Backend& backend() {
  // Never destroyed: streams and allocations may outlive static destructors at exit.
  static Backend* const selected = select_backend().release();
  return *selected;
}

}  // namespace cudascope::cuda::detail
