#include "gzip_file.h"

#include "../check.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#if CUDASCOPE_HAVE_ZLIB
#include <zlib.h>
#endif

namespace cudascope::cuda::detail::alloc {
namespace {
[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw_error(error_code::kInvalidValue, path.c_str(), __FILE__, __LINE__, path + ": " + why);
}
}  // namespace

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_file_maybe_gz(const std::string& path) {
  if (ends_with(path, ".gz")) {
#if CUDASCOPE_HAVE_ZLIB
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
    std::string out;
    char buffer[1 << 16];
    int n = 0;
    while ((n = gzread(f, buffer, sizeof buffer)) > 0) out.append(buffer, static_cast<std::size_t>(n));
    int code = 0;
    const char* message = gzerror(f, &code);
    gzclose(f);
    if (n < 0 || (code != Z_OK && code != Z_STREAM_END)) fail(path, std::string("not valid gzip: ") + message);
    return out;
#else
    fail(path, "this build has no zlib, so .gz files cannot be read");
#endif
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file_maybe_gz(const std::string& path, const std::string& data) {
  if (ends_with(path, ".gz")) {
#if CUDASCOPE_HAVE_ZLIB
    gzFile f = gzopen(path.c_str(), "wb6");
    if (f == nullptr) fail(path, std::string("cannot create: ") + std::strerror(errno));
    std::size_t done = 0;
    while (done < data.size()) {
      const auto chunk = static_cast<unsigned>(std::min<std::size_t>(data.size() - done, 1u << 30));
      if (gzwrite(f, data.data() + done, chunk) != static_cast<int>(chunk)) {
        gzclose(f);
        fail(path, "write failed");
      }
      done += chunk;
    }
    if (gzclose(f) != Z_OK) fail(path, "write failed");
    return;
#else
    fail(path, "this build has no zlib, so .gz files cannot be written");
#endif
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(path, std::string("cannot create: ") + std::strerror(errno));
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  if (!out) fail(path, "write failed");
}

}  // namespace cudascope::cuda::detail::alloc
