#include <cudascope/gui/rank_timeline.h>

#include <cudascope/gui/capped_text.h>

#include <cudascope/analysis/trace_loader.h>
#include <cudascope/util/json_escape.h>

#include <QFileInfo>

#include <algorithm>
#include <map>
#include <set>

namespace cudascope::gui {
namespace {

using analysis::TraceModel;

QString micros(std::int64_t ns) { return QString::number(double(ns) / 1000.0, 'f', 3) + " us"; }

// Trace JSON times are microseconds; ns keep all their digits as three decimals.
void append_us(std::string& out, std::int64_t ns) {
  const bool negative = ns < 0;
  const std::uint64_t a = negative ? std::uint64_t(0) - std::uint64_t(ns) : std::uint64_t(ns);
  if (negative) out += '-';
  out += std::to_string(a / 1000);
  const unsigned frac = unsigned(a % 1000);
  if (frac) {
    char buf[8];
    std::snprintf(buf, sizeof buf, ".%03u", frac);
    out += buf;
  }
}

}  // namespace

QString RankGroup::label() const {
  QString text = QStringLiteral("rank %1").arg(rank);
  if (!host.empty()) text += QStringLiteral(" (%1)").arg(capped(std::string_view(host), kMaxLabelChars));  // drawn at every repaint
  return text;
}

QString RankGroup::clockText() const {
  switch (clock) {
    case Clock::reference: return QStringLiteral("rank %1: the reference clock").arg(rank);
    case Clock::one_clock:
      return reference_rank >= 0 && reference_rank != rank
                 ? QStringLiteral("rank %1: same host as rank %2, one clock").arg(rank).arg(reference_rank)
                 : QStringLiteral("rank %1: one host, one clock").arg(rank);
    case Clock::aligned: {
      QString text = QStringLiteral("rank %1 aligned to rank %2").arg(rank).arg(reference_rank);
      if (alignment.via_rank >= 0) text += QStringLiteral(" through rank %1").arg(alignment.via_rank);
      text += QStringLiteral(": offset %1 ± %2 (%3 collectives paired by %4)")
                  .arg(micros(alignment.offset_ns), micros(alignment.error_ns))
                  .arg(alignment.collectives)
                  .arg(QString::fromLatin1(analysis::to_string(alignment.pairing)));
      if (alignment.counts_differ) text += QStringLiteral("; the ranks ran different numbers of collectives");
      return text;
    }
    case Clock::unaligned:
      return QStringLiteral("rank %1 not aligned to rank %2: no collectives to match (times as recorded, clocks may differ)")
          .arg(rank)
          .arg(reference_rank);
  }
  return {};
}

QString RankGroup::pairingText() const {
  if (communicators.isEmpty()) return {};
  const QString rule = QString::fromLatin1(analysis::to_string(pairing));
  if (pairing == analysis::CollectivePairing::order)
    return QStringLiteral("collectives paired by order (the traces do not all name their process groups)");
  return QStringLiteral("collectives paired by %1: %2").arg(rule, communicators.join(QStringLiteral(", ")));
}

QString RankGroup::headerText() const {
  // An aligned rank's clock text names the rule already: only its communicators are added.
  if (clock == Clock::aligned) {
    if (pairing == analysis::CollectivePairing::order || communicators.isEmpty()) return clockText();
    return clockText() + QStringLiteral("; communicators ") + communicators.join(QStringLiteral(", "));
  }
  const QString pairing_text = pairingText();
  return pairing_text.isEmpty() ? clockText() : clockText() + QStringLiteral("; ") + pairing_text;
}

std::vector<std::vector<std::size_t>> rank_sets(const std::vector<const TraceModel*>& models) {
  std::map<analysis::TraceFormat, std::vector<std::size_t>> by_format;
  for (std::size_t i = 0; i < models.size(); ++i)
    if (models[i] && models[i]->rank >= 0) by_format[models[i]->format].push_back(i);
  std::vector<std::vector<std::size_t>> sets;
  for (auto& [format, members] : by_format) {
    if (members.size() < 2) continue;
    std::set<int> ranks;
    for (std::size_t i : members) ranks.insert(models[i]->rank);
    if (ranks.size() != members.size()) continue;  // a rank twice: separate timelines, as before
    std::sort(members.begin(), members.end(), [&](std::size_t a, std::size_t b) { return models[a]->rank < models[b]->rank; });
    sets.push_back(members);
  }
  std::sort(sets.begin(), sets.end());  // in the order the files were given
  return sets;
}

namespace {

QStringList communicator_names(const std::vector<analysis::CommunicatorCollectives>& communicators) {
  QStringList names;
  for (const auto& c : communicators) {
    if (c.name.empty()) continue;
    // Names from the traces, drawn in the rank's header at every repaint: each cut.
    QString text = capped(std::string_view(c.name), kMaxLabelChars);
    QStringList about;
    if (!c.description.empty()) about << capped(std::string_view(c.description), kMaxLabelChars);
    if (!c.members.empty()) about << capped(std::string_view(c.members), kMaxLabelChars);
    if (!about.isEmpty()) text += QStringLiteral(" (%1)").arg(about.join(' '));
    names << text;
  }
  return names;
}

}  // namespace

std::vector<RankGroup> plan_clocks(const std::vector<RankSource>& unsorted) {
  std::vector<RankSource> sources = unsorted;
  std::stable_sort(sources.begin(), sources.end(), [](const RankSource& a, const RankSource& b) { return a.model->rank < b.model->rank; });
  std::vector<analysis::RankCollectives> collectives;
  collectives.reserve(sources.size());
  for (const auto& s : sources) collectives.push_back(analysis::collectives_by_communicator(*s.model));
  std::vector<analysis::RankClockInput> inputs;
  for (std::size_t i = 0; i < sources.size(); ++i) inputs.push_back({sources[i].model->rank, sources[i].model->host, &collectives[i]});
  const analysis::ClockPlan plan = analysis::plan_rank_clocks(inputs);
  std::vector<RankGroup> groups;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    const analysis::RankClock& planned = plan.ranks[i];
    RankGroup g;
    g.rank = planned.rank;
    g.host = planned.host;
    g.path = sources[i].path;
    g.clock = planned.clock;
    g.alignment = planned.alignment;
    g.reference_rank = planned.reference_rank;
    g.pairing = plan.pairing;
    g.communicators = communicator_names(collectives[i]);
    if (g.communicators.isEmpty() && !collectives[i].empty()) g.communicators << QStringLiteral("all");
    groups.push_back(std::move(g));
  }
  return groups;
}

namespace {

// Several ranks' events written as one trace's JSON: pids unique across ranks, processes
// ordered rank first, times shifted by each rank's clock offset, flow and async ids scoped to
// their rank. Remembers which rank group each written pid belongs to.
class MergedTraceText {
 public:
  MergedTraceText(bool kineto, std::uint64_t input_bytes) {
    text_.reserve(std::size_t(input_bytes + input_bytes / 4 + 4096));
    // Kineto traces stay Kineto's (schemaVersion marks the format); others read as Chrome's.
    text_ += kineto ? "{\"schemaVersion\":1,\"traceEvents\":[\n" : "{\"traceEvents\":[\n";
  }

  void add_rank(const TraceModel& m, int group, std::int64_t offset_ns) {
    const std::vector<std::string> pid_json = write_processes(m, group);
    const auto& tracks = m.tracks();
    std::vector<std::string> tid_json(tracks.size());
    for (std::size_t t = 0; t < tracks.size(); ++t) {
      if (tracks[t].tid_text != analysis::kNoString) util::append_json_string(tid_json[t], m.string(tracks[t].tid_text));
      else tid_json[t] = std::to_string(tracks[t].tid);
    }
    const std::string id_suffix = "@rank" + std::to_string(m.rank);
    for (std::size_t i = 0; i < m.event_count(); ++i) {
      const auto& e = m.event(i);
      const std::string_view name = m.name(e);
      const auto& track = tracks[e.track];
      // Ours replace the process's place, and a GPU's labels (they make it "GPU N").
      if (e.ph == 'M' && (name == "process_sort_index" || (name == "process_labels" && m.processes()[track.process].device >= 0)))
        continue;
      write_event(m, e, pid_json[track.process] + ",\"tid\":" + tid_json[e.track], offset_ns, id_suffix);
    }
  }

  std::string finish() {
    text_ += "\n]}\n";
    return std::move(text_);
  }

  // The rank group of a process of the model read back from the text; -1 if none.
  int group_of(const TraceModel& merged, const TraceModel::Process& proc) const {
    if (proc.pid_text != analysis::kNoString) {
      const auto it = group_of_text_pid_.find(std::string(merged.string(proc.pid_text)));
      return it != group_of_text_pid_.end() ? it->second : -1;
    }
    const auto it = group_of_pid_.find(proc.pid);
    return it != group_of_pid_.end() ? it->second : -1;
  }

 private:
  void separator() {
    if (!first_event_) text_ += ",\n";
    first_event_ = false;
  }

  // A pid unique across ranks: a host keeps its own when it can; a GPU moves above any real
  // pid and is named "GPU N" by its labels (the model's rule).
  std::string unique_pid(const TraceModel& m, const TraceModel::Process& proc, int group) {
    std::string json;
    if (proc.pid_text != analysis::kNoString) {
      std::string name(m.string(proc.pid_text));
      if (used_text_pids_.count(name)) name += " (rank " + std::to_string(m.rank) + ")";
      while (used_text_pids_.count(name)) name += "'";
      used_text_pids_.insert(name);
      group_of_text_pid_[name] = group;
      util::append_json_string(json, name);
      return json;
    }
    std::int64_t pid = proc.device >= 0 ? 1'000'000'000LL + std::int64_t(group) * 100'000 + proc.device : proc.pid;
    if (proc.device < 0 && used_pids_.count(pid)) pid = proc.pid + std::int64_t(group + 1) * 10'000'000LL;
    while (used_pids_.count(pid)) ++pid;
    used_pids_.insert(pid);
    group_of_pid_[pid] = group;
    return std::to_string(pid);
  }

  // Each process's pid, place (rank first, then the model's order) and, for a GPU, the label
  // that makes it one.
  std::vector<std::string> write_processes(const TraceModel& m, int group) {
    const auto& processes = m.processes();
    std::vector<std::uint32_t> order(processes.size());
    for (std::uint32_t p = 0; p < order.size(); ++p) order[p] = p;
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
      if (processes[a].sort_index != processes[b].sort_index) return processes[a].sort_index < processes[b].sort_index;
      return processes[a].pid < processes[b].pid;
    });
    std::vector<std::int64_t> sort_index(processes.size());
    for (std::size_t k = 0; k < order.size(); ++k) sort_index[order[k]] = std::int64_t(group) * 1'000'000'000'000LL + std::int64_t(k);
    std::vector<std::string> pid_json(processes.size());
    for (std::uint32_t p = 0; p < processes.size(); ++p) {
      const std::string json = unique_pid(m, processes[p], group);
      pid_json[p] = json;
      separator();
      text_ += "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" + json + ",\"tid\":0,\"args\":{\"sort_index\":" +
               std::to_string(sort_index[p]) + "}}";
      if (processes[p].device >= 0)
        text_ += ",\n{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":" + json + ",\"tid\":0,\"args\":{\"labels\":\"GPU " +
                 std::to_string(processes[p].device) + "\"}}";
    }
    return pid_json;
  }

  void write_event(const TraceModel& m, const TraceModel::Event& e, const std::string& pid_and_tid, std::int64_t offset_ns,
                   const std::string& id_suffix) {
    separator();
    text_ += "{\"ph\":\"";
    text_ += e.ph;
    text_ += '"';
    if (e.name != analysis::kNoString) {
      text_ += ",\"name\":";
      util::append_json_string(text_, m.name(e));
    }
    if (e.cat != analysis::kNoString) {
      text_ += ",\"cat\":";
      util::append_json_string(text_, m.cat(e));
    }
    text_ += ",\"pid\":" + pid_and_tid;
    if (e.ph != 'M') {
      text_ += ",\"ts\":";
      append_us(text_, e.ts_ns + offset_ns);
      if (e.ph == 'X' && e.dur_ns >= 0) {
        text_ += ",\"dur\":";
        append_us(text_, e.dur_ns);
      }
    }
    if (e.id != analysis::kNoId) {
      text_ += ",\"id\":";
      util::append_json_string(text_, m.id_text(e) + id_suffix);  // flows and async ranges stay within their rank
    }
    if (e.flags & TraceModel::kFlagBindEnclosing) text_ += ",\"bp\":\"e\"";
    if (e.flags & TraceModel::kFlagGlobalScope) text_ += ",\"s\":\"g\"";
    if (e.flags & TraceModel::kFlagProcessScope) text_ += ",\"s\":\"p\"";
    const std::string_view args = m.args_json(e);
    if (!args.empty()) {
      text_ += ",\"args\":";
      text_ += args;
    }
    text_ += '}';
  }

  std::string text_;
  bool first_event_ = true;
  std::set<std::int64_t> used_pids_;
  std::set<std::string> used_text_pids_;
  std::map<std::int64_t, int> group_of_pid_;
  std::map<std::string, int> group_of_text_pid_;
};

}  // namespace

MergedRankTimeline merge_rank_traces(std::vector<RankSource> sources) {
  MergedRankTimeline out;
  if (sources.empty()) {
    out.error = "no traces to merge";
    return out;
  }
  std::stable_sort(sources.begin(), sources.end(), [](const RankSource& a, const RankSource& b) { return a.model->rank < b.model->rank; });
  out.groups = plan_clocks(sources);
  out.one_clock = std::all_of(out.groups.begin(), out.groups.end(),
                              [](const RankGroup& g) { return g.clock == RankGroup::Clock::one_clock; });
  std::uint64_t bytes = 0;
  for (const auto& s : sources) bytes += s.model->input_bytes;
  const bool kineto = std::all_of(sources.begin(), sources.end(),
                                  [](const RankSource& s) { return s.model->format == analysis::TraceFormat::kineto; });
  MergedTraceText merged(kineto, bytes);
  for (std::size_t g = 0; g < sources.size(); ++g) {
    const bool aligned = out.groups[g].clock == RankGroup::Clock::aligned;
    merged.add_rank(*sources[g].model, int(g), aligned ? out.groups[g].alignment.offset_ns : 0);
  }

  std::string origin = "ranks";
  for (const auto& g : out.groups) origin += " " + std::to_string(g.rank);
  auto loaded = analysis::load_trace_text(merged.finish(), origin);
  if (!loaded.ok()) {
    out.error = "merging the rank traces failed: " + loaded.error;
    return out;
  }
  out.model = std::move(loaded.model);
  for (const auto& s : sources)
    for (const auto& note : s.model->notes)
      out.model->notes.push_back("rank " + std::to_string(s.model->rank) + ": " + note);
  out.process_group.assign(out.model->processes().size(), -1);
  for (std::size_t p = 0; p < out.model->processes().size(); ++p) {
    out.process_group[p] = merged.group_of(*out.model, out.model->processes()[p]);
  }
  return out;
}

}  // namespace cudascope::gui
