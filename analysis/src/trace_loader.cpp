#include <cudascope/analysis/trace_loader.h>
#include <cudascope/util/byte_source.h>
#include <cudascope/util/input_budget.h>

#include "trace_parser.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <sys/stat.h>

namespace cudascope::analysis {
namespace {

using detail::JsonStatus;
using detail::TraceHeader;
using detail::TraceParser;
using detail::TracePhase;

std::uint64_t budget_of(const TraceLoadOptions& options) { return options.budget_bytes != 0 ? options.budget_bytes : util::input_budget(); }

bool is_budget_error(const std::string& error, std::uint64_t budget) {
  return error.rfind(util::budget_exceeded_message(budget), 0) == 0;
}

// What the model says of itself once the parse stopped (at the end, or cut short).
void finish_model(TraceModel& model, const TraceHeader& header, bool cut_short, std::uint64_t cut_at, const std::string& why,
                  std::uint64_t input_bytes) {
  model.format = header.cudascope ? TraceFormat::cudascope : header.kineto ? TraceFormat::kineto : TraceFormat::chrome;
  model.cut_short = cut_short;
  model.input_bytes = input_bytes;
  model.complete = header.cudascope ? header.has_summary && header.summary_complete : !cut_short;
  if (header.has_summary) {
    model.dropped_buffer = header.summary_dropped_buffer;
    model.dropped_cupti = header.summary_dropped_cupti;
  } else {
    // A trace cut short has no summary: the dropped-records counter says what it lost so far.
    for (const TraceModel::Counter& counter : model.counters()) {
      if (model.string(counter.name) != "cudascope dropped records") continue;
      for (const TraceModel::CounterSeries& series : counter.series) {
        const std::string_view key = model.string(series.key);
        for (const double v : series.values) {
          if (key == "buffer") model.dropped_buffer = std::max(model.dropped_buffer, static_cast<std::int64_t>(v));
          if (key == "cupti") model.dropped_cupti = std::max(model.dropped_cupti, static_cast<std::int64_t>(v));
        }
      }
    }
  }
  model.cut_short_reason.clear();
  if (cut_short) {
    model.cut_short_reason =
        "the file ends at byte " + std::to_string(cut_at) + " before the trace does" + (why.empty() ? "" : " (" + why + ")");
    model.notes.push_back(model.cut_short_reason + ": read up to its last complete event (" +
                          std::to_string(model.event_count()) + " events)");
  }
  if (!model.format_problems.empty()) {
    // Past the listed ones the parser keeps one more line, empty until it says how many more
    // (listed lines start "event " or "byte ").
    std::string& last = model.format_problems.back();
    if (last.empty() || last.starts_with("(")) {
      const std::uint64_t listed = model.format_problems.size() - 1;
      last = "(" + std::to_string(model.format_problem_count - listed) + " more problems not listed)";
    }
    const std::uint64_t count = model.format_problem_count;
    model.notes.push_back(std::to_string(count) + (count == 1 ? " format problem" : " format problems") + " (see --check)");
  }
}

TraceLoadResult load_from(util::ByteSource& source, const std::string& origin, const TraceLoadOptions& options, std::uint64_t budget) {
  util::ByteReader reader(source, budget);
  auto model = std::make_unique<TraceModel>();
  TraceModelBuilder builder(*model);
  TraceHeader header;
  TraceParser parser(reader, builder, header, 0, options.progress);
  const JsonStatus status = parser.run(TracePhase::start);
  TraceLoadResult result;
  const std::string input_error = parser.cursor().input_error();
  if (is_budget_error(input_error, budget)) {
    result.error = origin + ": " + input_error;
    return result;
  }
  // The end-of-input rule of every reader (util::finish_input): a gzip trace cut before its
  // trailer (a killed writer) is read up to its last complete event below; any other damage
  // (corrupt gzip data, a CRC-32 or length that does not match, bytes after the last member,
  // a read error) is refused, since the events read may not be the ones written.
  if (!input_error.empty() && !source.ended_early()) {
    result.error = origin + ": " + input_error;
    return result;
  }
  if (status == JsonStatus::syntax) {
    result.error = origin + ": " + parser.error();
    return result;
  }
  if (status == JsonStatus::end && !header.saw_events) {
    const std::uint64_t at = parser.cursor().offset();
    result.error = origin + ": byte " + std::to_string(at) + ": " +
                   (at == 0 && input_error.empty() ? std::string("the file is empty (not a trace)")
                                                   : "the input ends before any \"traceEvents\" array (not a trace)") +
                   (input_error.empty() ? "" : " (" + input_error + ")");
    return result;
  }
  builder.index();
  const bool cut = status == JsonStatus::end;
  finish_model(*model, header, cut, parser.resume_offset(), cut ? input_error : std::string(), parser.cursor().offset());
  result.model = std::move(model);
  return result;
}

// A plain file read from a given offset (the follower's resume point).
class OffsetFileSource : public util::ByteSource {
 public:
  OffsetFileSource(std::FILE* file, std::uint64_t size) : file_(file), size_(size) {}
  ~OffsetFileSource() override { std::fclose(file_); }
  size_t read(char* out, size_t n) override {
    const size_t got = std::fread(out, 1, n, file_);
    if (got < n && std::ferror(file_)) error_ = std::string("read error: ") + std::strerror(errno);
    read_ += got;
    return got;
  }
  double progress() const override { return size_ == 0 ? 1.0 : std::min(1.0, static_cast<double>(read_) / static_cast<double>(size_)); }

 private:
  std::FILE* file_;
  std::uint64_t size_;
  std::uint64_t read_ = 0;
};

}  // namespace

TraceLoadResult load_trace(const std::string& path, const TraceLoadOptions& options) {
  TraceLoadResult result;
  std::uint64_t budget = 0;
  try {
    budget = budget_of(options);
  } catch (const std::exception& e) {
    result.error = e.what();
    return result;
  }
  std::string error;
  auto source = util::open_input(path, budget, error);
  if (!source) {
    result.error = "cannot open trace '" + path + "': " + error;
    return result;
  }
  return load_from(*source, path, options, budget);
}

TraceLoadResult load_trace(util::PeekedInput& input, const TraceLoadOptions& options) {
  TraceLoadResult result;
  std::uint64_t budget = 0;
  try {
    budget = budget_of(options);
  } catch (const std::exception& e) {
    result.error = e.what();
    return result;
  }
  const std::unique_ptr<util::ByteSource> source = input.take();
  return load_from(*source, input.path(), options, budget);
}

TraceLoadResult load_trace_text(std::string_view text, const std::string& origin, const TraceLoadOptions& options) {
  TraceLoadResult result;
  std::uint64_t budget = 0;
  try {
    budget = budget_of(options);
  } catch (const std::exception& e) {
    result.error = e.what();
    return result;
  }
  auto source = util::memory_source(text);
  if (util::is_gzip(text.substr(0, 2))) source = util::inflate_source(std::move(source), budget);
  return load_from(*source, origin, options, budget);
}

// --- TraceFollower ---

struct TraceFollower::State {
  std::string path;
  TraceLoadOptions options;
  TraceModel model;
  TraceModelBuilder builder{model};
  TraceHeader header;
  TracePhase phase = TracePhase::start;
  std::uint64_t offset = 0;  // where the next poll starts reading (in the decompressed text)
  // A gzip trace: the compressed bytes read so far, the inflater that continues from there,
  // and the decompressed text from `offset` on that the parser has not taken yet.
  std::unique_ptr<util::GzipTail> gzip;
  std::uint64_t compressed_offset = 0;
  std::string pending;
};

TraceFollower::TraceFollower(std::string path, TraceLoadOptions options) : state_(std::make_unique<State>()) {
  state_->path = std::move(path);
  state_->options = std::move(options);
}

TraceFollower::~TraceFollower() = default;

const TraceModel& TraceFollower::model() const { return state_->model; }

bool TraceFollower::finished() const noexcept { return state_->phase == TracePhase::done; }

long long TraceFollower::poll() {
  State& s = *state_;
  if (s.phase == TracePhase::done) return 0;
  std::FILE* file = std::fopen(s.path.c_str(), "rb");
  if (file == nullptr) {
    if (errno == ENOENT) return 0;  // not written yet
    error_ = "cannot open trace '" + s.path + "': " + std::strerror(errno);
    return -1;
  }
  std::uint64_t budget = 0;
  try {
    budget = budget_of(s.options);
  } catch (const std::exception& e) {
    std::fclose(file);
    error_ = e.what();
    return -1;
  }
  unsigned char magic[2] = {};
  if (!s.gzip && std::fread(magic, 1, 2, file) < 2) {  // too short yet to tell gzip from text
    std::fclose(file);
    return 0;
  }
  if (!s.gzip && magic[0] == 0x1f && magic[1] == 0x8b) s.gzip = std::make_unique<util::GzipTail>(budget);
  if (s.gzip) return poll_gzip(file, budget);
  struct stat st {};
  fstat(fileno(file), &st);
  if (static_cast<std::uint64_t>(st.st_size) <= s.offset || std::fseek(file, static_cast<long>(s.offset), SEEK_SET) != 0) {
    std::fclose(file);
    return 0;
  }
  OffsetFileSource source(file, static_cast<std::uint64_t>(st.st_size) - s.offset);
  return parse_more(source, budget);
}

// A gzip trace: inflate what was appended since the last poll, a piece at a time so the
// decompressed text held at once stays small, and parse what follows the last complete piece.
long long TraceFollower::poll_gzip(std::FILE* file, std::uint64_t budget) {
  State& s = *state_;
  long long added = 0;
  std::vector<char> compressed(1 << 20);
  struct stat st {};
  fstat(fileno(file), &st);
  if (std::fseek(file, static_cast<long>(s.compressed_offset), SEEK_SET) != 0) {
    std::fclose(file);
    return 0;
  }
  // Progress is the share of the compressed file read, not of each piece's text.
  const auto file_progress = s.options.progress;
  const double file_bytes = static_cast<double>(std::max<off_t>(st.st_size, 1));
  s.options.progress = [&](double) { return !file_progress || file_progress(static_cast<double>(s.compressed_offset) / file_bytes); };
  for (std::size_t got; s.phase != TracePhase::done && (got = std::fread(compressed.data(), 1, compressed.size(), file)) > 0;) {
    s.compressed_offset += got;
    if (!s.gzip->feed(std::string_view(compressed.data(), got), s.pending)) {
      error_ = s.path + ": " + s.gzip->error();
      added = -1;
      break;
    }
    auto source = util::memory_source(s.pending);
    const std::uint64_t start = s.offset;
    const long long more = parse_more(*source, budget);
    if (more < 0) {
      added = -1;
      break;
    }
    s.pending.erase(0, static_cast<std::size_t>(s.offset - std::min(s.offset, start)));
    added += more;
    // The parser reports progress only every 64k events, which a piece may not hold: report
    // (and honour a cancel) after every piece too.
    if (file_progress && !file_progress(static_cast<double>(s.compressed_offset) / file_bytes)) {
      error_ = s.path + ": cancelled";
      added = -1;
      break;
    }
  }
  s.options.progress = file_progress;
  std::fclose(file);
  return added;
}

// Parses `source` (the trace's text from state_->offset on) into the model and moves the
// resume point past the last complete piece.
long long TraceFollower::parse_more(util::ByteSource& source, std::uint64_t budget) {
  State& s = *state_;
  if (s.phase == TracePhase::start) {  // the header is read again from byte 0
    s.header = TraceHeader{};
    s.model.devices.clear();
  }
  util::ByteReader reader(source, budget > s.offset ? budget - s.offset : 1);
  const std::size_t before = s.model.event_count();
  TraceParser parser(reader, s.builder, s.header, s.offset, s.options.progress);
  const JsonStatus status = parser.run(s.phase);
  if (status == JsonStatus::syntax) {
    error_ = s.path + ": " + parser.error();
    return -1;
  }
  if (is_budget_error(parser.cursor().input_error(), budget > s.offset ? budget - s.offset : 1)) {
    error_ = s.path + ": " + parser.cursor().input_error();
    return -1;
  }
  // Resume after the last complete piece; a header still being written is read again from 0.
  s.phase = parser.phase();
  s.offset = s.phase == TracePhase::start ? 0 : parser.resume_offset();
  s.builder.index();
  const bool done = s.phase == TracePhase::done;
  s.model.notes.clear();
  finish_model(s.model, s.header, !done, s.offset, {}, s.offset);
  if (!done) s.model.notes.clear();  // still being written: not "cut short" yet
  s.model.cut_short = false;
  s.model.cut_short_reason.clear();
  return static_cast<long long>(s.model.event_count() - before);
}

}  // namespace cudascope::analysis
