#pragma once
// Stand-in for the part of PyTorch's libc10 the allocator library binds to: c10::Error's
// (SourceLocation, std::string) constructor and c10::OutOfMemoryError, with the same mangled
// names, so a test without PyTorch can check that the alloc hook throws the type PyTorch
// catches. The members differ from c10's; the library never touches them.

#include <cstdint>
#include <exception>
#include <string>

#define FAKE_C10_API __attribute__((visibility("default")))

namespace c10 {

struct SourceLocation {
  const char* function;
  const char* file;
  std::uint32_t line;
};

class FAKE_C10_API Error : public std::exception {
 public:
  Error(SourceLocation source_location, std::string msg);
  const char* what() const noexcept override;
  const std::string& msg() const { return msg_; }
  const char* function() const { return function_; }

 private:
  std::string msg_;
  const char* function_;
};

class FAKE_C10_API OutOfMemoryError : public Error {
  using Error::Error;
};

// Emits OutOfMemoryError's vtable and type_info in the library, as libc10 has them.
FAKE_C10_API void throw_out_of_memory_for_test();

}  // namespace c10
