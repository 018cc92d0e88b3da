#include "whole_file.h"

#include "../check.h"

#include <cudascope/util/byte_source.h>
#include <cudascope/util/input_budget.h>
#include <cudascope/util/output_file.h>

#include <stdexcept>

namespace cudascope::cuda::detail::alloc {

std::string read_whole_file(const std::string& path) {
  std::string error;
  std::string data = util::read_file(path, util::input_budget(), error);
  if (!error.empty()) throw_error(error_code::kInvalidValue, path.c_str(), __FILE__, __LINE__, error);
  return data;
}

void write_whole_file(const std::string& path, std::string_view data) {
  try {
    util::write_file(path, data);
  } catch (const std::runtime_error& e) {
    throw_error(error_code::kInvalidValue, path.c_str(), __FILE__, __LINE__, e.what());
  }
}

}  // namespace cudascope::cuda::detail::alloc
