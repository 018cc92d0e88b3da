// Backend selection: CUDASCOPE_BACKEND=cuda|sim|auto, read once.
#include "backend.h"

#include "../check.h"

#include <cstdlib>
#include <mutex>
#include <string>

namespace cudascope::cuda::detail {
namespace {

std::unique_ptr<Backend> select_backend() {
  const char* text = std::getenv("CUDASCOPE_BACKEND");
  const std::string choice = (text == nullptr || *text == '\0') ? "cuda" : text;
  if (choice == "sim") return make_sim_backend();
  if (choice == "cuda" || choice == "auto") {
    if (choice == "auto" && !cuda_backend_has_device()) return make_sim_backend();
    std::unique_ptr<Backend> cuda = make_cuda_backend();
    if (cuda) return cuda;
    if (choice == "auto") return make_sim_backend();
    throw_error(error_code::kInitializationError, "CUDASCOPE_BACKEND", __FILE__, __LINE__,
                "CUDASCOPE_BACKEND=cuda, but this build of cudascope has no cuda backend (use sim or auto)");
  }
  throw_error(error_code::kInvalidValue, "CUDASCOPE_BACKEND", __FILE__, __LINE__,
              "CUDASCOPE_BACKEND='" + choice + "' is not a backend; valid: cuda, sim, auto");
}

}  // namespace

Backend& backend() {
  // Never destroyed: streams and allocations may outlive static destructors at exit.
  static Backend* const selected = select_backend().release();
  return *selected;
}

}  // namespace cudascope::cuda::detail
