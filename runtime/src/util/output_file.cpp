#include <cudascope/util/output_file.h>

#if CUDASCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <optional>
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

namespace {
// Beside `path`, hidden, unique to this process and call, with path's ".gz" ending (which
// decides the encoding).
std::string partial_path_for(const std::string& path) {
  static std::atomic<unsigned> calls{0};
  const std::filesystem::path target(path);
  std::string name = "." + target.filename().string() + ".partial-" + std::to_string(getpid()) + "-" +
                     std::to_string(calls.fetch_add(1));
  if (path.ends_with(".gz")) name += ".gz";
  return (target.parent_path() / name).string();
}

void write_in_place(const std::string& path, std::string_view data) {
  OutputFile out(path, 6);
  out.write(data);
  out.close();
}
}  // namespace

void write_file(const std::string& path, std::string_view data) {
  // A file is written whole beside its path and renamed over it, so a failed write (full
  // disk, size limit, a crash) leaves no half file and keeps what the path held before. In
  // place: a device or pipe (/dev/stdout), or where the directory takes no new file.
  std::error_code error;
  const auto status = std::filesystem::status(path, error);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) return write_in_place(path, data);
  // Through a symbolic link: the file it names is replaced, not the link.
  std::string target = path;
  if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, error))) {
    target = std::filesystem::weakly_canonical(path, error).string();
    if (error) target = path;
  }
  const std::string partial = partial_path_for(target);
  std::optional<OutputFile> out;
  try {
    out.emplace(partial, 6);
  } catch (const std::runtime_error&) {
    return write_in_place(path, data);
  }
  try {
    out->write(data);
    out->close();
  } catch (const std::runtime_error& e) {
    std::remove(partial.c_str());
    // Said of the path asked for, not of the hidden one.
    std::string message = e.what();
    if (const auto at = message.find(partial); at != std::string::npos) message.replace(at, partial.size(), path);
    throw std::runtime_error(message);
  }
  if (std::rename(partial.c_str(), target.c_str()) != 0) {
    const int why = errno;
    std::remove(partial.c_str());
    errno = why;
    fail(path, "replace");
  }
}

}  // namespace cudascope::util
