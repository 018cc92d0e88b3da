#pragma once
// The file a trace is streamed into: util::OutputFile (plain, or gzip when the path ends in
// ".gz"; flush() leaves a readable file up to that point). Kept as a name for the writer's
// constructor; new code includes <cudascope/util/output_file.h> directly.

#include <cudascope/util/output_file.h>

namespace cudascope::exporters {

using TraceOutput = util::OutputFile;

}  // namespace cudascope::exporters
