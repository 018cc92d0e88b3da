#include "fake_c10.h"

namespace c10 {

Error::Error(SourceLocation source_location, std::string msg)
    : msg_(std::move(msg)), function_(source_location.function) {}

const char* Error::what() const noexcept { return msg_.c_str(); }

void throw_out_of_memory_for_test() { throw OutOfMemoryError({__func__, __FILE__, __LINE__}, "test"); }

}  // namespace c10
