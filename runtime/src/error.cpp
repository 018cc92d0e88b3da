#include <cudascope/cuda/error.h>

#include "check.h"

#include <cstdio>

namespace cudascope::cuda {
namespace {
std::string compose(int code, const std::string& call, const char* file, int line, const std::string& detail) {
  std::string message = error_name(code) + " (" + std::to_string(code) + ") in " + call + " at " + file + ":" +
                        std::to_string(line);
  if (!detail.empty()) message += ": " + detail;
  return message;
}
}  // namespace

Error::Error(int code, std::string call, const char* file, int line, const std::string& detail)
    : std::runtime_error(compose(code, call, file, line, detail)),
      code_(code),
      call_(std::move(call)),
      file_(file),
      line_(line) {}

OutOfMemoryError::OutOfMemoryError(std::string call, const char* file, int line, const std::string& detail)
    : Error(error_code::kMemoryAllocation, std::move(call), file, line, detail) {}

std::string error_name(int code) {
  switch (code) {
    case error_code::kSuccess: return "cudaSuccess";
    case error_code::kInvalidValue: return "cudaErrorInvalidValue";
    case error_code::kMemoryAllocation: return "cudaErrorMemoryAllocation";
    case error_code::kInitializationError: return "cudaErrorInitializationError";
    case error_code::kNoDevice: return "cudaErrorNoDevice";
    case error_code::kInvalidDevice: return "cudaErrorInvalidDevice";
    case error_code::kInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case error_code::kIllegalState: return "cudaErrorIllegalState";
    case error_code::kNotReady: return "cudaErrorNotReady";
    case error_code::kPeerAccessUnsupported: return "cudaErrorPeerAccessUnsupported";
    case error_code::kNotSupported: return "cudaErrorNotSupported";
    case error_code::kStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case error_code::kStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
    case error_code::kStreamCaptureUnmatched: return "cudaErrorStreamCaptureUnmatched";
    case error_code::kStreamCaptureUnjoined: return "cudaErrorStreamCaptureUnjoined";
    case error_code::kStreamCaptureIsolation: return "cudaErrorStreamCaptureIsolation";
    case error_code::kStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
    case error_code::kStreamCaptureWrongThread: return "cudaErrorStreamCaptureWrongThread";
    default: return detail::backend_error_name(code);
  }
}

}  // namespace cudascope::cuda
