#include <cudascope/gui/allocator_states.h>

#include <cudascope/gui/record_table_model.h>

namespace cudascope::gui {

AllocatorStates::AllocatorStates(std::shared_ptr<const LoadedSnapshot> loaded)
    : loaded_(std::move(loaded)), replay_(*loaded_->snapshot, loaded_->device) {}

AllocatorStates::~AllocatorStates() = default;

std::int64_t AllocatorStates::firstEntry() const { return std::int64_t(replay_.first_entry()); }

std::int64_t AllocatorStates::lastEntry() const { return std::int64_t(replay_.end_entry()) - 1; }

analysis::AllocatorState AllocatorStates::stateAfter(std::int64_t entry) { return replay_.state_after(entry); }

QString AllocatorStates::describe(const analysis::AllocatorState& state) const {
  if (state.entry < firstEntry()) return QStringLiteral("Before the first trace entry");
  const auto& trace = loaded_->snapshot->trace;
  const auto& e = trace[std::size_t(state.entry)];
  const auto action = analysis::action_name(e.action);
  return QStringLiteral("%1  %2  %3 at %4 ms   (replayed %5 entries from the nearest checkpoint; checkpoints every %6)")
      .arg(QString::fromUtf8(action.data(), int(action.size())), formatAddress(e.addr), formatBytes(e.size))
      .arg(double(e.time_us - trace[replay_.first_entry()].time_us) / 1000.0, 0, 'f', 3)
      .arg(replay_.last_steps())
      .arg(replay_.spacing());
}

}  // namespace cudascope::gui
