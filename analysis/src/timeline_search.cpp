#include <cudascope/analysis/timeline_search.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace cudascope::analysis {
namespace {

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); });
  return out;
}

}  // namespace

bool TimelineSearch::before(std::uint32_t a, std::uint32_t b) const {
  const auto ta = model_->event(a).ts_ns, tb = model_->event(b).ts_ns;
  return ta != tb ? ta < tb : a < b;
}

TimelineSearch TimelineSearch::build(const TraceModel& model) {
  TimelineSearch s;
  s.model_ = &model;
  const std::size_t names = model.strings().size();
  // Counting sort by name: count, prefix sums, then fill track by track. Each track lists
  // its events by start, so each name's group is a few sorted runs (one per track holding
  // that name), merged in place afterwards.
  std::vector<std::uint64_t> counts(names + 1, 0);
  for (const auto& track : model.tracks())
    for (std::uint32_t e : track.events) {
      const auto name = model.event(e).name;
      if (name != kNoString) ++counts[name];
    }
  s.offsets_.assign(names + 1, 0);
  for (std::size_t i = 0; i < names; ++i) s.offsets_[i + 1] = s.offsets_[i] + counts[i];
  s.events_.resize(s.offsets_[names]);
  std::vector<std::uint64_t> cursor(s.offsets_.begin(), s.offsets_.end() - 1);
  std::vector<std::vector<std::uint64_t>> run_starts(names);  // where each track's run begins, per name
  std::vector<std::uint32_t> last_track(names, UINT32_MAX);
  for (std::uint32_t t = 0; t < model.tracks().size(); ++t)
    for (std::uint32_t e : model.tracks()[t].events) {
      const auto name = model.event(e).name;
      if (name == kNoString) continue;
      if (last_track[name] != t) {
        if (last_track[name] != UINT32_MAX) run_starts[name].push_back(cursor[name]);
        last_track[name] = t;
      }
      s.events_[cursor[name]++] = e;
    }
  auto less = [&s](std::uint32_t a, std::uint32_t b) { return s.before(a, b); };
  for (std::uint32_t name = 0; name < names; ++name) {
    if (counts[name] == 0) continue;
    s.name_ids_.push_back(name);
    const auto begin = s.events_.begin() + static_cast<std::ptrdiff_t>(s.offsets_[name]);
    const auto end = s.events_.begin() + static_cast<std::ptrdiff_t>(s.offsets_[name + 1]);
    // Within one track, equal starts list the longer event first; order ties by event index.
    auto run_begin = begin;
    for (std::uint64_t at : run_starts[name]) {
      const auto run_end = s.events_.begin() + static_cast<std::ptrdiff_t>(at);
      if (!std::is_sorted(run_begin, run_end, less)) std::sort(run_begin, run_end, less);
      run_begin = run_end;
    }
    if (!std::is_sorted(run_begin, end, less)) std::sort(run_begin, end, less);
    for (auto it = run_starts[name].begin(); it != run_starts[name].end(); ++it)
      std::inplace_merge(begin, s.events_.begin() + static_cast<std::ptrdiff_t>(*it), it + 1 == run_starts[name].end()
                                                                                         ? end
                                                                                         : s.events_.begin() + static_cast<std::ptrdiff_t>(*(it + 1)),
                         less);
  }
  return s;
}

SearchMatches TimelineSearch::find(const SearchQuery& query) const {
  SearchMatches out;
  if (query.text.empty() && !query.matcher) return out;
  std::optional<std::regex> re;
  if (query.regex && !query.matcher) {
    try {
      auto flags = std::regex::ECMAScript | std::regex::optimize;
      if (!query.case_sensitive) flags |= std::regex::icase;
      re.emplace(query.text, flags);
    } catch (const std::regex_error& e) {
      out.error = "not a regular expression: " + query.text + " (" + e.what() + ")";
      return out;
    }
  }
  const std::string needle = query.case_sensitive ? query.text : lowered(query.text);
  for (std::uint32_t name : name_ids_) {
    const std::string_view text = model_->string(name);
    const bool hit = query.matcher ? query.matcher(text)
                     : re          ? std::regex_search(text.begin(), text.end(), *re)
                        : (query.case_sensitive ? text.find(needle) != std::string_view::npos
                                                : lowered(text).find(needle) != std::string::npos);
    if (!hit) continue;
    out.names.push_back(name);
    out.count += offsets_[name + 1] - offsets_[name];
  }
  return out;
}

std::optional<std::uint32_t> TimelineSearch::next(const SearchMatches& matches, std::int64_t ts_ns,
                                                  std::uint32_t event) const {
  std::optional<std::uint32_t> best;
  auto after = [&](std::uint32_t e) {
    const auto t = model_->event(e).ts_ns;
    return t != ts_ns ? t > ts_ns : e > event;
  };
  for (std::uint32_t name : matches.names) {
    const auto begin = events_.begin() + static_cast<std::ptrdiff_t>(offsets_[name]);
    const auto end = events_.begin() + static_cast<std::ptrdiff_t>(offsets_[name + 1]);
    const auto it = std::partition_point(begin, end, [&](std::uint32_t e) { return !after(e); });
    if (it != end && (!best || before(*it, *best))) best = *it;
  }
  return best;
}

std::optional<std::uint32_t> TimelineSearch::previous(const SearchMatches& matches, std::int64_t ts_ns,
                                                      std::uint32_t event) const {
  std::optional<std::uint32_t> best;
  auto earlier = [&](std::uint32_t e) {
    const auto t = model_->event(e).ts_ns;
    return t != ts_ns ? t < ts_ns : e < event;
  };
  for (std::uint32_t name : matches.names) {
    const auto begin = events_.begin() + static_cast<std::ptrdiff_t>(offsets_[name]);
    const auto end = events_.begin() + static_cast<std::ptrdiff_t>(offsets_[name + 1]);
    const auto it = std::partition_point(begin, end, earlier);
    if (it != begin && (!best || before(*best, *(it - 1)))) best = *(it - 1);
  }
  return best;
}

std::vector<std::uint32_t> TimelineSearch::in_range(const SearchMatches& matches, std::int64_t t0, std::int64_t t1,
                                                    std::size_t limit) const {
  std::vector<std::uint32_t> out;
  for (std::uint32_t name : matches.names) {
    const auto begin = events_.begin() + static_cast<std::ptrdiff_t>(offsets_[name]);
    const auto end = events_.begin() + static_cast<std::ptrdiff_t>(offsets_[name + 1]);
    auto it = std::partition_point(begin, end, [&](std::uint32_t e) { return model_->event(e).ts_ns < t0; });
    // At most `limit` per name: the first `limit` overall are among them.
    for (std::size_t taken = 0; it != end && model_->event(*it).ts_ns < t1 && taken < limit; ++it, ++taken) out.push_back(*it);
  }
  std::sort(out.begin(), out.end(), [this](std::uint32_t a, std::uint32_t b) { return before(a, b); });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::size_t TimelineSearch::memory_bytes() const noexcept {
  return events_.capacity() * 4 + offsets_.capacity() * 8 + name_ids_.capacity() * 4;
}

}  // namespace cudascope::analysis
