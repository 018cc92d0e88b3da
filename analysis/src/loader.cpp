#include <cudascope/analysis/loader.h>

#include "byte_source.h"
#include "snapshot_readers.h"

#include <cstdio>

namespace cudascope::analysis {
namespace {

bool is_gzip(const unsigned char* p, size_t n) { return n >= 2 && p[0] == 0x1f && p[1] == 0x8b; }

Result<Snapshot> load(detail::ByteSource& source, const std::string& name, const LoadOptions& options) {
  detail::ByteReader reader(source);
  if (!reader.ensure(1)) {
    if (!source.error().empty()) return LoadError{name, 0, source.error()};
    return LoadError{name, 0, "expected a snapshot (pickle or JSON), found an empty file"};
  }
  const auto first = static_cast<unsigned char>(*reader.data());
  if (first == 0x80) return detail::read_pickle_snapshot(reader, name, options);
  if (first == '{' || first == '[' || first == ' ' || first == '\n' || first == '\r' || first == '\t' || first == 0xef)
    return detail::read_json_snapshot(reader, name, options);
  static const char* digits = "0123456789abcdef";
  return LoadError{name, 0,
                   std::string("expected a pickle (protocol 2-5, first byte 0x80) or a JSON object, found byte 0x") +
                       digits[first >> 4] + digits[first & 15]};
}

}  // namespace

Result<Snapshot> load_snapshot(const std::string& path, const LoadOptions& options) {
  unsigned char magic[2] = {0, 0};
  size_t got = 0;
  if (std::FILE* f = std::fopen(path.c_str(), "rb")) {
    got = std::fread(magic, 1, 2, f);
    std::fclose(f);
  }
  std::string error;
  auto source = detail::open_file_source(path, error);
  if (!source) return LoadError{path, 0, error};
  if (is_gzip(magic, got)) source = detail::inflate_source(std::move(source));
  auto result = load(*source, path, options);
  if (result.ok() && options.progress) options.progress(1.0);
  return result;
}

Result<Snapshot> load_snapshot_from_bytes(std::string_view bytes, const std::string& name, const LoadOptions& options) {
  auto source = detail::memory_source(bytes);
  if (is_gzip(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()))
    source = detail::inflate_source(std::move(source));
  return load(*source, name, options);
}

}  // namespace cudascope::analysis
