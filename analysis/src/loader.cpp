#include <cudascope/analysis/loader.h>

#include "byte_order_mark.h"
#include "snapshot_readers.h"

#include <cudascope/util/byte_source.h>
#include <cudascope/util/input_budget.h>

#include <stdexcept>

namespace cudascope::analysis {
namespace {

Result<Snapshot> load(util::ByteSource& source, uint64_t budget, const std::string& name, const LoadOptions& options) {
  util::ByteReader reader(source, budget);
  detail::skip_byte_order_mark(reader);
  if (!reader.ensure(1)) {
    if (!reader.error().empty()) return LoadError{name, reader.offset(), reader.error()};
    return LoadError{name, reader.offset(), "expected a snapshot (pickle or JSON), found an empty file"};
  }
  const auto first = static_cast<unsigned char>(*reader.data());
  if (first == 0x80) return detail::read_pickle_snapshot(reader, name, options, budget);
  if (first == '{' || first == '[' || first == ' ' || first == '\n' || first == '\r' || first == '\t')
    return detail::read_json_snapshot(reader, name, options);
  static const char* digits = "0123456789abcdef";
  return LoadError{name, reader.offset(),
                   std::string("expected a pickle (protocol 2-5, first byte 0x80) or a JSON object, found byte 0x") +
                       digits[first >> 4] + digits[first & 15]};
}

// The options' budget, or the process default; false (with `error`) when
// CUDASCOPE_INPUT_BUDGET is malformed, since loaders report rather than throw.
bool budget_of(const LoadOptions& options, uint64_t& budget, std::string& error) {
  try {
    budget = options.max_input_bytes != 0 ? options.max_input_bytes : util::input_budget();
    return true;
  } catch (const std::invalid_argument& e) {
    error = e.what();
    return false;
  }
}

}  // namespace

Result<Snapshot> load_snapshot(const std::string& path, const LoadOptions& options) {
  uint64_t budget = 0;
  std::string error;
  if (!budget_of(options, budget, error)) return LoadError{path, 0, error};
  auto source = util::open_input(path, budget, error);
  if (!source) return LoadError{path, 0, error};
  auto result = load(*source, budget, path, options);
  if (result.ok() && options.progress) options.progress(1.0);
  return result;
}

Result<Snapshot> load_snapshot(util::PeekedInput& input, const LoadOptions& options) {
  uint64_t budget = 0;
  std::string error;
  if (!budget_of(options, budget, error)) return LoadError{input.path(), 0, error};
  const std::unique_ptr<util::ByteSource> source = input.take();
  auto result = load(*source, budget, input.path(), options);
  if (result.ok() && options.progress) options.progress(1.0);
  return result;
}

Result<Snapshot> load_snapshot_from_bytes(std::string_view bytes, const std::string& name, const LoadOptions& options) {
  uint64_t budget = 0;
  std::string error;
  if (!budget_of(options, budget, error)) return LoadError{name, 0, error};
  auto source = util::memory_source(bytes);
  if (util::is_gzip(bytes)) source = util::inflate_source(std::move(source), budget);
  return load(*source, budget, name, options);
}

}  // namespace cudascope::analysis
