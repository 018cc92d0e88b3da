// `cudascope devices`: a table of the devices the current backend sees.
#include "checks.h"
#include "command.h"

#include <cudascope/cuda.h>

#include <cstdio>

namespace {

void print_devices() {
  using namespace cudascope;
  cli::check_backend_variable();
  const std::string backend = cuda::backend_name();
  const int count = cuda::device_count();
  if (count == 0) {
    std::printf("no devices on the '%s' backend (set CUDASCOPE_BACKEND=sim for the simulated device)\n",
                backend.c_str());
    return;
  }
  std::printf("%-5s  %-28s  %-10s  %12s  %5s  %-7s\n", "index", "name", "capability", "memory", "SMs", "backend");
  for (int i = 0; i < count; ++i) {
    const cuda::DeviceProperties props = cuda::get_device_properties(i);
    const std::string capability = std::to_string(props.major) + "." + std::to_string(props.minor);
    std::printf("%-5d  %-28s  %-10s  %8.1f GiB  %5d  %-7s\n", i, props.name.c_str(), capability.c_str(),
                static_cast<double>(props.total_memory) / (1ULL << 30), props.multi_processor_count, backend.c_str());
  }
}

}  // namespace

CUDASCOPE_COMMAND(devices, 10) {
  CLI::App* sub = app.add_subcommand("devices", "List the devices of the current backend (CUDASCOPE_BACKEND)");
  sub->callback([] { print_devices(); });
}
