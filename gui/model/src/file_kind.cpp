#include <cudascope/gui/file_kind.h>

#include <cudascope/util/byte_source.h>

#include <string>

namespace cudascope::gui {

FileKind sniff_bytes(std::string_view head) {
  size_t i = 0;
  if (head.starts_with("\xEF\xBB\xBF")) i = 3;  // a UTF-8 byte-order mark
  while (i < head.size() && (head[i] == ' ' || head[i] == '\n' || head[i] == '\r' || head[i] == '\t')) ++i;
  if (i >= head.size()) return FileKind::unknown;
  if (static_cast<unsigned char>(head[i]) == 0x80) return FileKind::snapshot;  // a pickle's PROTO opcode
  if (head[i] == '[') return FileKind::trace;  // the Chrome trace format's bare array
  if (head[i] != '{') return FileKind::unknown;
  // An object: the first key that only one of the two schemas has decides.
  size_t best = std::string_view::npos;
  FileKind kind = FileKind::unknown;
  auto consider = [&](std::string_view key, FileKind k) {
    const size_t at = head.find(key, i);
    if (at < best) best = at, kind = k;
  };
  for (std::string_view key : {"\"traceEvents\"", "\"schemaVersion\"", "\"deviceProperties\"", "\"displayTimeUnit\""})
    consider(key, FileKind::trace);
  for (std::string_view key : {"\"segments\"", "\"device_traces\"", "\"allocator_settings\""}) consider(key, FileKind::snapshot);
  return kind;
}

FileSniff sniff_file(const QString& path) {
  FileSniff out;
  std::string error;
  auto source = util::open_input(path.toStdString(), 1 << 20, error);
  if (!source) {
    // The reader's message names the system error; the user needs the path too.
    out.error = QString::fromStdString(error);
    if (!out.error.contains(path)) out.error = path + ": " + out.error;
    return out;
  }
  std::string head(256 * 1024, '\0');
  size_t got = 0;
  while (got < head.size()) {
    const size_t n = source->read(head.data() + got, head.size() - got);
    if (n == 0) break;
    got += n;
  }
  head.resize(got);
  if (got == 0 && !source->error().empty()) {
    out.error = path + ": " + QString::fromStdString(source->error());
    return out;
  }
  out.kind = sniff_bytes(head);
  return out;
}

}  // namespace cudascope::gui
