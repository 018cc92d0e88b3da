#include "nvrtc_compiler.h"

#include "../check.h"
#include "../tool_loader.h"

#include <cstddef>
#include <memory>
#include <vector>

namespace cudascope::cuda::detail {
namespace {

using Result = int;     // nvrtcResult; 0 is NVRTC_SUCCESS
using Program = void*;  // nvrtcProgram

struct Nvrtc {
  Result (*version)(int* major, int* minor);
  Result (*num_supported_archs)(int* count);
  Result (*supported_archs)(int* archs);
  Result (*create)(Program* program, const char* source, const char* name, int headers, const char* const* contents,
                   const char* const* include_names);
  Result (*compile)(Program program, int options, const char* const* values);
  Result (*log_size)(Program program, std::size_t* size);
  Result (*log)(Program program, char* log);
  Result (*cubin_size)(Program program, std::size_t* size);
  Result (*cubin)(Program program, char* cubin);
  Result (*ptx_size)(Program program, std::size_t* size);
  Result (*ptx)(Program program, char* ptx);
  Result (*destroy)(Program* program);
  const char* (*error_string)(Result result);
  std::vector<int> archs;  // what this NVRTC compiles for, ascending
};

template <typename Fn>
void resolve(void* library, Fn& fn, const char* name) {
  fn = reinterpret_cast<Fn>(tools::find_symbol(library, {name}));
  CUDASCOPE_CHECK(fn != nullptr, error_code::kNotSupported, "dlsym", std::string("libnvrtc has no ") + name);
}

void check(const Nvrtc& api, Result result, const char* call) {
  if (result == 0) return;
  const char* text = api.error_string(result);
  throw_error(error_code::kUnknown, call, __FILE__, __LINE__,
              "NVRTC result " + std::to_string(result) + (text ? std::string(" (") + text + ")" : std::string()));
}

Nvrtc load() {
  void* library = tools::open_nvrtc(tools::nvrtc_candidates());
  Nvrtc api{};
  resolve(library, api.version, "nvrtcVersion");
  resolve(library, api.num_supported_archs, "nvrtcGetNumSupportedArchs");
  resolve(library, api.supported_archs, "nvrtcGetSupportedArchs");
  resolve(library, api.create, "nvrtcCreateProgram");
  resolve(library, api.compile, "nvrtcCompileProgram");
  resolve(library, api.log_size, "nvrtcGetProgramLogSize");
  resolve(library, api.log, "nvrtcGetProgramLog");
  resolve(library, api.cubin_size, "nvrtcGetCUBINSize");
  resolve(library, api.cubin, "nvrtcGetCUBIN");
  resolve(library, api.ptx_size, "nvrtcGetPTXSize");
  resolve(library, api.ptx, "nvrtcGetPTX");
  resolve(library, api.destroy, "nvrtcDestroyProgram");
  resolve(library, api.error_string, "nvrtcGetErrorString");
  int count = 0;
  check(api, api.num_supported_archs(&count), "nvrtcGetNumSupportedArchs");
  api.archs.resize(static_cast<std::size_t>(count));
  if (count > 0) check(api, api.supported_archs(api.archs.data()), "nvrtcGetSupportedArchs");
  return api;
}

// Loaded once; a failure is thrown to every caller, which may retry (as after installing it).
const Nvrtc& nvrtc() {
  static const Nvrtc api = load();
  return api;
}

// The device's own architecture when NVRTC knows it (a CUBIN); otherwise the newest one it
// knows below the device's, as PTX the driver compiles forward (as torch's jiterator does).
std::string target_for(const Nvrtc& api, int arch, bool& cubin) {
  int best = 0;
  for (int known : api.archs) {
    if (known == arch) {
      cubin = true;
      return "sm_" + std::to_string(arch);
    }
    if (known < arch) best = known;
  }
  CUDASCOPE_CHECK(best > 0, error_code::kNotSupported, "nvrtcGetSupportedArchs",
                  "this NVRTC cannot compile for compute capability " + std::to_string(arch / 10) + "." +
                      std::to_string(arch % 10) + " or any older architecture it could run");
  cubin = false;
  return "compute_" + std::to_string(best);
}

struct ProgramDeleter {
  const Nvrtc* api;
  void operator()(Program* program) const {
    api->destroy(program);
    delete program;
  }
};

std::string program_log(const Nvrtc& api, Program program) {
  std::size_t size = 0;
  if (api.log_size(program, &size) != 0 || size == 0) return {};
  std::string log(size, '\0');
  if (api.log(program, log.data()) != 0) return {};
  log.resize(size - 1);  // the log's terminating NUL
  return log;
}

}  // namespace

DeviceImage nvrtc_compile(const std::string& source, const std::string& program_name, int arch) {
  const Nvrtc& api = nvrtc();
  DeviceImage image;
  image.target = target_for(api, arch, image.cubin);
  std::unique_ptr<Program, ProgramDeleter> program(new Program(nullptr), ProgramDeleter{&api});
  check(api, api.create(program.get(), source.c_str(), program_name.c_str(), 0, nullptr, nullptr), "nvrtcCreateProgram");
  // The code string's functions carry no __device__: make it the default, as torch's jiterator.
  const std::string arch_option = "--gpu-architecture=" + image.target;
  const char* options[] = {"--std=c++17", "-default-device", arch_option.c_str()};
  const Result compiled = api.compile(*program, 3, options);
  if (compiled != 0) {
    throw_error(error_code::kInvalidValue, "nvrtcCompileProgram", __FILE__, __LINE__,
                "NVRTC could not compile the jiterator function for " + image.target + ":\n" + program_log(api, *program));
  }
  std::size_t size = 0;
  check(api, image.cubin ? api.cubin_size(*program, &size) : api.ptx_size(*program, &size),
        image.cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize");
  image.bytes.assign(size, '\0');
  check(api, image.cubin ? api.cubin(*program, image.bytes.data()) : api.ptx(*program, image.bytes.data()),
        image.cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX");
  return image;
}

}  // namespace cudascope::cuda::detail
