#pragma once
// What a file holds, decided by its content (never its name): an allocator snapshot
// (PyTorch's pickle, our JSON) or a trace (ours, torch.profiler's, any Chrome trace-event
// file), plain or gzip. Reads at most the first 256 KiB (decompressed).

#include <QString>

namespace cudascope::gui {

enum class FileKind { snapshot, trace, unknown };

struct FileSniff {
  FileKind kind = FileKind::unknown;
  QString error;  // the file cannot be read: why
};

FileSniff sniff_file(const QString& path);
// Same, from the first bytes of the (decompressed) content.
FileKind sniff_bytes(std::string_view head);

}  // namespace cudascope::gui
