#pragma once
// The two format readers behind load_snapshot(). Both stream from a ByteReader and fill a
// SnapshotBuilder; both report bad input as a LoadError with the byte offset.

#include <cudascope/util/byte_source.h>

#include <cudascope/analysis/load_error.h>
#include <cudascope/analysis/loader.h>
#include <cudascope/analysis/snapshot.h>

namespace cudascope::analysis::detail {

using util::ByteReader;
using util::ByteSource;

// `budget` is the input budget in force: it also bounds the objects the pickle builds.
Result<Snapshot> read_pickle_snapshot(ByteReader& reader, const std::string& name, const LoadOptions& options,
                                      uint64_t budget);
Result<Snapshot> read_json_snapshot(ByteReader& reader, const std::string& name, const LoadOptions& options);

}  // namespace cudascope::analysis::detail
