#pragma once
// Telling an allocator snapshot from a trace by content (never by file name), so a command
// given either can pick the loader: a pickle (first byte 0x80) is a snapshot; a JSON object
// is a trace when its first known top-level key is a trace's ("traceEvents", Kineto's
// "schemaVersion"/"deviceProperties"/..., cudascope's header), a snapshot when it is a
// snapshot's ("segments", "device_traces", ...); a bare JSON array is a snapshot when its
// first object is a segment (torch.cuda.memory_snapshot() dumped as JSON), else a trace's
// events. Gzip and a UTF-8 byte-order mark before JSON are looked through (before a pickle
// the mark is refused as its first byte). Reads only the first MiB.

#include <cudascope/analysis/load_error.h>

#include <string>

namespace cudascope::util {
class PeekedInput;
}

namespace cudascope::analysis {

enum class FileKind { snapshot, trace };
const char* to_string(FileKind kind) noexcept;

// The kind of `path`, or an error naming the file and what its start looked like.
Result<FileKind> detect_file_kind(const std::string& path);
// The same from an input opened once (it reads only its head), so the loader can read it
// next from the same stream: how a pipe is told apart and then read.
Result<FileKind> detect_file_kind(util::PeekedInput& input);

}  // namespace cudascope::analysis
