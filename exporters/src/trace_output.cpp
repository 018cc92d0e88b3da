#include <cudascope/exporters/trace_output.h>

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace cudascope::exporters {
namespace {
bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

TraceOutput::TraceOutput(const std::string& path) : path_(path) {
  if (ends_with(path, ".gz")) {
    // Level 1: the writer thread must keep up with a launch-bound program.
    gz_ = gzopen(path.c_str(), "wb1");
    if (gz_ == nullptr) throw std::runtime_error("cannot create trace file '" + path + "': " + std::strerror(errno));
  } else {
    file_ = std::fopen(path.c_str(), "wb");
    if (file_ == nullptr) throw std::runtime_error("cannot create trace file '" + path + "': " + std::strerror(errno));
  }
}

TraceOutput::~TraceOutput() { close(); }

void TraceOutput::write(std::string_view bytes) {
  if (bytes.empty()) return;
  if (gz_ != nullptr) {
    if (gzwrite(static_cast<gzFile>(gz_), bytes.data(), static_cast<unsigned>(bytes.size())) <= 0) {
      throw std::runtime_error("cannot write trace file '" + path_ + "'");
    }
  } else if (file_ != nullptr && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
    throw std::runtime_error("cannot write trace file '" + path_ + "': " + std::strerror(errno));
  }
}

void TraceOutput::flush() {
  if (gz_ != nullptr) gzflush(static_cast<gzFile>(gz_), Z_SYNC_FLUSH);
  if (file_ != nullptr) std::fflush(file_);
}

void TraceOutput::close() {
  if (gz_ != nullptr) {
    gzclose(static_cast<gzFile>(gz_));
    gz_ = nullptr;
  }
  if (file_ != nullptr) {
    std::fclose(file_);
    file_ = nullptr;
  }
}

}  // namespace cudascope::exporters
