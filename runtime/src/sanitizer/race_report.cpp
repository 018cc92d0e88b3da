// A race report in the layout torch.cuda._sanitizer prints.
#include <cudascope/cuda/sanitizer.h>

#include <sstream>
#include <utility>

namespace cudascope::cuda::sanitizer {

const char* access_type_name(Access::Type type) noexcept {
  return type == Access::Type::kRead ? "reading from" : "writing to";
}

namespace {

std::string stream_name(const Access& access) {
  std::string name = std::to_string(access.stream);
  if (access.device != 0) name += " (cuda:" + std::to_string(access.device) + ")";
  return name;
}

// "<op>\nwriting to argument(s) self, other, and to the output\nWith stack trace:\n<stack>\n"
void write_access(std::ostringstream& out, const Access& access) {
  out << access.op << '\n' << access_type_name(access.type);
  if (!access.arguments.empty()) {
    out << " argument(s) ";
    for (std::size_t i = 0; i < access.arguments.size(); ++i) out << (i > 0 ? ", " : "") << access.arguments[i];
    if (access.is_output) out << ", and to";
  }
  if (access.is_output) out << " the output";
  out << "\nWith stack trace:\n" << access.stack << '\n';
}

}  // namespace

std::string RaceReport::message() const {
  std::ostringstream out;
  out << "============================\n"
      << "CSAN detected a possible data race on tensor with data pointer " << data_ptr << '\n'
      << "Access by stream " << stream_name(current) << " during kernel:\n";
  write_access(out, current);
  out << "Previous access by stream " << stream_name(previous) << " during kernel:\n";
  write_access(out, previous);
  if (!allocation_stack.empty()) {
    out << "Tensor was allocated with stack trace:\n" << allocation_stack;
  } else {
    out << "Trace for tensor allocation not found.";
  }
  return out.str();
}

UnsynchronizedAccessError::UnsynchronizedAccessError(RaceReport report)
    : std::runtime_error(report.message()), report_(std::move(report)) {}

}  // namespace cudascope::cuda::sanitizer
