#pragma once
// Loading allocator snapshots: PyTorch's pickles (torch.cuda.memory._dump_snapshot,
// protocols 2 to 5) and cudascope's JSON, each plain or gzip-compressed, told apart by
// their first bytes rather than by file name (JSON may start with a UTF-8 byte-order mark;
// a pickle may not).
//
// The loaders stream (bounded buffers, records converted as they are read), report
// progress, honour a cancellation flag, and never throw or crash on bad input: they return
// a LoadError naming the file, the byte offset and what was expected there. Input longer
// than LoadOptions::max_input_bytes is such an error too, and so is a damaged file: a gzip
// stream must end with its checked trailer and nothing may follow the document
// (util::finish_input(), the rule every reader applies). A snapshot whose figures cannot be
// (more allocated than reserved in a segment, sizes past any device's memory) is refused
// as blocks outside their segments are. Byte offsets count the decompressed stream. Safe to call from any thread; each call is independent.

#include <cudascope/analysis/load_error.h>
#include <cudascope/analysis/snapshot.h>

#include <atomic>
#include <functional>
#include <string>
#include <string_view>

namespace cudascope::util {
class PeekedInput;
}

namespace cudascope::analysis {

struct LoadOptions {
  // Called on the loading thread with the fraction of the input consumed (0..1), about
  // once per MiB. Keep it cheap; post to the UI thread from it.
  std::function<void(double)> progress;
  // When set and it becomes true, the load stops soon and returns a cancelled LoadError.
  const std::atomic<bool>* cancel = nullptr;
  // Most bytes of (decompressed) input read before the load fails with util's budget
  // message; 0 means util::input_budget(). Input that never ends (/dev/zero, a gzip bomb)
  // stops here instead of exhausting memory. Half of it bounds what a pickle builds (its
  // stack, memo and containers), since a few bytes of pickle can build many objects.
  uint64_t max_input_bytes = 0;
};

enum class SnapshotFormat { pickle, json };

Result<Snapshot> load_snapshot(const std::string& path, const LoadOptions& options = {});
// Same, from an input opened once (after detect_file_kind() looked at its head), read from
// its first byte: a pipe works. Its path names it in errors.
Result<Snapshot> load_snapshot(util::PeekedInput& input, const LoadOptions& options = {});
// Same, from bytes already in memory; `name` stands for the file in messages.
Result<Snapshot> load_snapshot_from_bytes(std::string_view bytes, const std::string& name,
                                          const LoadOptions& options = {});

}  // namespace cudascope::analysis
