#pragma once
// Exceptions thrown by the runtime, as torch.cuda raises them.

#include <stdexcept>
#include <string>

namespace cudascope::cuda {

// A failed CUDA (or simulated-device) call: the error code, the call's text and where
// it was made. code() is the cudaError_t value; the sim backend uses the same values.
class Error : public std::runtime_error {
 public:
  Error(int code, std::string call, const char* file, int line, const std::string& detail = {});
  int code() const noexcept { return code_; }
  const std::string& call() const noexcept { return call_; }
  const char* file() const noexcept { return file_; }
  int line() const noexcept { return line_; }

 private:
  int code_;
  std::string call_;
  const char* file_;
  int line_;
};

// The device ran out of memory (cudaErrorMemoryAllocation); the message says how much was
// asked for and what the allocator holds.
class OutOfMemoryError : public Error {
 public:
  OutOfMemoryError(std::string call, const char* file, int line, const std::string& detail);
};

// cudaError_t values the runtime relies on, so code outside the cuda backend need not
// include the CUDA headers.
namespace error_code {
inline constexpr int kSuccess = 0;
inline constexpr int kInvalidValue = 1;
inline constexpr int kMemoryAllocation = 2;
inline constexpr int kInitializationError = 3;
inline constexpr int kNoDevice = 100;
inline constexpr int kInvalidDevice = 101;
inline constexpr int kInvalidResourceHandle = 400;
inline constexpr int kIllegalState = 401;
inline constexpr int kNotReady = 600;
inline constexpr int kPeerAccessUnsupported = 217;
inline constexpr int kNotSupported = 801;
inline constexpr int kStreamCaptureUnsupported = 900;
inline constexpr int kStreamCaptureInvalidated = 901;
inline constexpr int kStreamCaptureUnmatched = 903;
inline constexpr int kStreamCaptureUnjoined = 904;
inline constexpr int kStreamCaptureIsolation = 905;
inline constexpr int kStreamCaptureImplicit = 906;
inline constexpr int kStreamCaptureWrongThread = 908;
inline constexpr int kUnknown = 999;
}  // namespace error_code

// The name of an error code ("cudaErrorMemoryAllocation"), for messages.
std::string error_name(int code);

}  // namespace cudascope::cuda
