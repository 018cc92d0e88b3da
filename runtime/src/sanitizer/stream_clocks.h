#pragma once
// The sanitizer's vector clocks (CSAN's StreamSynchronizations): per stream, the number of the
// last kernel of every other stream it is known to run after; per recorded event, the clock of
// its stream at the record; and the host's clock, what the host has waited for. Kernel numbers
// start at 1, so 0 means "nothing known". Not thread-safe: the sanitizer's lock guards it.

#include <cstdint>
#include <map>
#include <utility>

namespace cudascope::cuda::sanitizer::detail {

using StreamKey = std::pair<int, std::int64_t>;  // (device, Stream::id())
using Clock = std::map<StreamKey, std::uint64_t>;

class StreamClocks {
 public:
  // The stream's own entry becomes `seq_num` (its kernel about to be queued).
  void advance(const StreamKey& stream, std::uint64_t seq_num);
  // True when kernel `seq_num` of `other` is known to finish before `current`'s next kernel.
  bool ordered_after(const StreamKey& current, std::uint64_t seq_num, const StreamKey& other);

  void record_event(const void* event, const StreamKey& stream);
  void wait_event(const StreamKey& stream, const void* event);
  void forget_event(const void* event) { events_.erase(event); }
  // The host waited for an event / a stream / every stream of a device: every stream is then
  // ordered after what the host saw completed.
  void synchronize_event(const void* event);
  void synchronize_stream(const StreamKey& stream);
  void synchronize_device(int device);

  std::size_t stream_count() const noexcept { return streams_.size(); }
  std::size_t event_count() const noexcept { return events_.size(); }

 private:
  // A stream first seen now starts knowing what the host knows (CSAN's backfill).
  Clock& stream(const StreamKey& key);
  static void merge(Clock& into, const Clock& other);
  void everyone_merges(const Clock& other);

  std::map<StreamKey, Clock> streams_;
  std::map<const void*, Clock> events_;
  Clock host_;
};

}  // namespace cudascope::cuda::sanitizer::detail
