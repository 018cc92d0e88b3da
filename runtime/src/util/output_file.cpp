#include <cudascope/util/output_file.h>

#if CUDASCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace cudascope::util {
namespace {
[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw std::runtime_error("cannot " + what + " '" + path + "'" + (errno != 0 ? std::string(": ") + std::strerror(errno) : ""));
}
}  // namespace

OutputFile::OutputFile(const std::string& path, int gzip_level) : path_(path) {
  errno = 0;
  if (path.ends_with(".gz")) {
#if CUDASCOPE_HAVE_ZLIB
    const std::string mode = "wb" + std::to_string(gzip_level < 0 || gzip_level > 9 ? kFastGzip : gzip_level);
    gz_ = gzopen(path.c_str(), mode.c_str());
    if (gz_ == nullptr) fail(path, "create");
#else
    (void)gzip_level;
    throw std::runtime_error("cannot create '" + path + "': this build has no zlib, so .gz files cannot be written");
#endif
  } else {
    file_ = std::fopen(path.c_str(), "wb");
    if (file_ == nullptr) fail(path, "create");
  }
}

OutputFile::~OutputFile() {
  try {
    close();
  } catch (const std::exception&) {
    // A destructor cannot report; callers that care call close() themselves.
  }
}

void OutputFile::write(std::string_view bytes) {
  errno = 0;
#if CUDASCOPE_HAVE_ZLIB
  while (gz_ != nullptr && !bytes.empty()) {
    const auto chunk = static_cast<unsigned>(std::min<size_t>(bytes.size(), 1u << 30));
    if (gzwrite(static_cast<gzFile>(gz_), bytes.data(), chunk) != static_cast<int>(chunk)) fail(path_, "write");
    bytes.remove_prefix(chunk);
  }
#endif
  if (file_ != nullptr && !bytes.empty() && std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size())
    fail(path_, "write");
}

void OutputFile::flush() {
#if CUDASCOPE_HAVE_ZLIB
  if (gz_ != nullptr) gzflush(static_cast<gzFile>(gz_), Z_SYNC_FLUSH);
#endif
  if (file_ != nullptr) std::fflush(file_);
}

void OutputFile::close() {
  errno = 0;
#if CUDASCOPE_HAVE_ZLIB
  if (gz_ != nullptr) {
    const int rc = gzclose(static_cast<gzFile>(gz_));
    gz_ = nullptr;
    if (rc != Z_OK) fail(path_, "finish writing");
  }
#endif
  if (file_ != nullptr) {
    const int rc = std::fclose(file_);
    file_ = nullptr;
    if (rc != 0) fail(path_, "finish writing");
  }
}

void write_file(const std::string& path, std::string_view data) {
  OutputFile out(path, 6);
  out.write(data);
  out.close();
}

}  // namespace cudascope::util
