// Public entry points of the runtime that no other test reaches: Stream::wait_event and
// Event::wait, the live memory_summary and its abbreviated form, the memory fraction's getter,
// the max_/cached aliases and their resets, the PYTORCH_CUDA_ALLOC_CONF fallback, the host
// peak reset and utilization.
#include "clean_environment.h"
#include "test_support.h"

#include "allocator/caching_allocator.h"

#include <cudascope/cuda/host_memory.h>
#include <cudascope/cuda/telemetry.h>

#include <chrono>
#include <cstdio>
#include <sstream>

namespace cudascope::testing {
namespace {

using namespace std::chrono_literals;
constexpr std::int64_t kMiB = 1 << 20;

// The figures here are the defaults': none of the caller's CUDASCOPE_* (sim memory, allocator
// settings, ...) or PYTORCH_CUDA_ALLOC_CONF while the tests run, only the backend's choice.
[[maybe_unused]] const auto* const clean_environment =
    ::testing::AddGlobalTestEnvironment(new CleanEnvironmentForAllTests({"CUDASCOPE_BACKEND"}));

void clean_allocator() {
  cuda::empty_cache();
  cuda::detail::alloc::clear_memory_limit(0);
  cuda::reset_accumulated_memory_stats(0);
  cuda::reset_peak_memory_stats(0);
}

TEST(PublicApiTest, WaitEventHoldsBackTheWaitingStreamUntilTheEventCompletes) {
  cuda::Stream producer(0), consumer(0), bystander(0);
  cuda::busy_wait(300ms, producer);
  cuda::Event produced(/*enable_timing=*/true);
  producer.record_event(produced);
  consumer.wait_event(produced);
  cuda::Event consumed(true), unrelated(true);
  cuda::busy_wait(1ms, consumer);
  consumer.record_event(consumed);
  cuda::busy_wait(1ms, bystander);
  bystander.record_event(unrelated);
  bystander.synchronize();
  // The bystander's 1 ms is done; the consumer's is queued behind the producer's 300 ms.
  EXPECT_FALSE(produced.query());
  EXPECT_FALSE(consumer.query()) << "the waiting stream ran ahead of the event it waits on";
  consumer.synchronize();
  EXPECT_TRUE(produced.query()) << "the consumer finished before the event it waited on";
  EXPECT_GE(produced.elapsed_time(consumed), 0.0f);
  EXPECT_LT(produced.elapsed_time(unrelated), 0.0f) << "the control stream did not wait";
}

TEST(PublicApiTest, LiveMemorySummaryIsTheTableOfTheCurrentStats) {
  clean_allocator();
  void* small = cuda::caching_allocator_alloc(1000, 0);
  void* large = cuda::caching_allocator_alloc(3 * kMiB, 0);
  const std::string full = cuda::memory_summary(0);
  const std::string abbreviated = cuda::memory_summary(0, /*abbreviated=*/true);
  EXPECT_EQ(full, cuda::format_memory_summary(cuda::memory_stats(0), 0, false));
  EXPECT_EQ(abbreviated, cuda::format_memory_summary(cuda::memory_stats(0), 0, true));
  EXPECT_THAT(full, ::testing::HasSubstr("PyTorch CUDA memory summary, device ID 0"));
  // 3 MiB + 1 KiB allocated now: the "Allocated memory" row's current column says so.
  EXPECT_THAT(full, ::testing::ContainsRegex("Allocated memory +\\| +3073 KiB"));
  EXPECT_THAT(full, ::testing::HasSubstr("from large pool"));
  EXPECT_THAT(full, ::testing::HasSubstr("from small pool"));
  // Abbreviated: the same metric rows without the per-pool ones.
  EXPECT_THAT(abbreviated, ::testing::ContainsRegex("Allocated memory +\\| +3073 KiB"));
  EXPECT_THAT(abbreviated, ::testing::Not(::testing::HasSubstr("from large pool")));
  EXPECT_THAT(abbreviated, ::testing::Not(::testing::HasSubstr("from small pool")));
  const auto lines = [](const std::string& s) { return std::count(s.begin(), s.end(), '\n'); };
  EXPECT_EQ(lines(full) - lines(abbreviated), 2 * 9) << "two pool rows for each of the nine metrics";
  cuda::caching_allocator_delete(small);
  cuda::caching_allocator_delete(large);
  EXPECT_THAT(cuda::memory_summary(0, true), ::testing::ContainsRegex("Allocated memory +\\| +0 B +\\|"));
  clean_allocator();
}

TEST(PublicApiTest, MemoryFractionReadsBackAndCapsTheDevice) {
  clean_allocator();
  EXPECT_DOUBLE_EQ(cuda::get_per_process_memory_fraction(0), 1.0) << "no fraction set";
  cuda::set_per_process_memory_fraction(0.25, 0);
  EXPECT_NEAR(cuda::get_per_process_memory_fraction(0), 0.25, 1e-9);
  const auto total = static_cast<std::size_t>(cuda::mem_get_info(0).second);
  EXPECT_THROW(cuda::caching_allocator_alloc(total / 4 + 2 * kMiB, 0), cuda::OutOfMemoryError);
  void* fits = cuda::caching_allocator_alloc(total / 8, 0);
  EXPECT_NE(fits, nullptr);
  cuda::caching_allocator_delete(fits);
  clean_allocator();
  EXPECT_DOUBLE_EQ(cuda::get_per_process_memory_fraction(0), 1.0) << "the limit was cleared";
}

TEST(PublicApiTest, MaxAndCachedAliasesFollowPeaksAndTheirResets) {
  clean_allocator();
  void* a = cuda::caching_allocator_alloc(3 * kMiB, 0);  // one 20 MiB large segment
  EXPECT_EQ(cuda::memory_allocated(0), 3 * kMiB);
  EXPECT_EQ(cuda::memory_cached(0), 20 * kMiB);
  EXPECT_EQ(cuda::memory_cached(0), cuda::memory_reserved(0));
  cuda::caching_allocator_delete(a);
  EXPECT_EQ(cuda::memory_allocated(0), 0);
  EXPECT_EQ(cuda::max_memory_allocated(0), 3 * kMiB) << "the peak outlives the free";
  cuda::empty_cache();
  EXPECT_EQ(cuda::memory_cached(0), 0);
  EXPECT_EQ(cuda::max_memory_cached(0), 20 * kMiB);
  EXPECT_EQ(cuda::max_memory_cached(0), cuda::max_memory_reserved(0));
  // As in torch, both deprecated resets reset every peak (reset_peak_memory_stats).
  cuda::reset_max_memory_allocated(0);
  EXPECT_EQ(cuda::max_memory_allocated(0), 0);
  EXPECT_EQ(cuda::max_memory_cached(0), 0) << "reset to the current reservation, nothing";
  void* b = cuda::caching_allocator_alloc(kMiB, 0);  // small pool: a 2 MiB segment
  cuda::caching_allocator_delete(b);
  cuda::empty_cache();
  EXPECT_EQ(cuda::max_memory_cached(0), 2 * kMiB);
  EXPECT_EQ(cuda::max_memory_allocated(0), kMiB);
  cuda::reset_max_memory_cached(0);
  EXPECT_EQ(cuda::max_memory_cached(0), 0);
  EXPECT_EQ(cuda::max_memory_allocated(0), 0);
  // Accumulated totals are not peaks: the resets above leave them.
  EXPECT_EQ(cuda::memory_stats(0)["allocated_bytes.all.allocated"], 3 * kMiB + kMiB);
  clean_allocator();
}

// caching_allocator_delete(ptr, device) on another device than the pointer's: refused, and
// nothing changes. Needs a second device: skipped, saying so, on one.
TEST(PublicApiTest, DeleteOnTheWrongDeviceThrowsAndChangesNothing) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  clean_allocator();
  void* p = cuda::caching_allocator_alloc(4096, 0);
  const auto before = cuda::memory_stats(0);
  EXPECT_THAT([&] { cuda::caching_allocator_delete(p, 1); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("wrong device")));
  EXPECT_EQ(cuda::memory_stats(0), before);
  EXPECT_EQ(cuda::memory_allocated(1), 0);
  cuda::caching_allocator_delete(p, 0);
  EXPECT_EQ(cuda::memory_allocated(0), 0);
  clean_allocator();
}

TEST(PublicApiTest, EventWaitHoldsBackTheCurrentStreamAndEventsMove) {
  cuda::Stream producer(0), waiter(0);
  cuda::busy_wait(300ms, producer);
  cuda::Event produced(true);
  produced.record(producer);
  cuda::Event moved(std::move(produced));  // the recorded event moves with it
  {
    cuda::StreamGuard guard(waiter);
    moved.wait();  // makes the current stream, `waiter`, wait
  }
  cuda::Event after(true);
  cuda::busy_wait(1ms, waiter);
  after.record(waiter);
  EXPECT_FALSE(waiter.query()) << "Event::wait() did not hold back the current stream";
  after.synchronize();
  EXPECT_TRUE(moved.query());
  EXPECT_GE(moved.elapsed_time(after), 0.0f);
  cuda::Event assigned;
  assigned = std::move(moved);
  EXPECT_TRUE(assigned.is_created());
  EXPECT_TRUE(assigned.query());
}

TEST(PublicApiTest, HostMemoryPeakResetsToTheCurrentUse) {
  void* a = cuda::host::allocate(1 << 20);
  void* b = cuda::host::allocate(1 << 20);
  cuda::host::free(b);
  cuda::empty_host_cache();  // b's block goes back: allocations.current drops, its peak stays
  auto stats = cuda::host_memory_stats();
  EXPECT_GE(stats.at("allocations.peak"), stats.at("allocations.current") + 1) << "two were held at once, one is now";
  cuda::reset_peak_host_memory_stats();
  stats = cuda::host_memory_stats();
  for (const char* figure : {"allocations", "allocated_bytes", "active_requests", "active_bytes"}) {
    EXPECT_EQ(stats.at(std::string(figure) + ".peak"), stats.at(std::string(figure) + ".current")) << figure;
  }
  cuda::host::free(a);
}

TEST(PublicApiTest, UtilizationIsAPercentage) {
  const int percent = cuda::utilization(0);
  EXPECT_GE(percent, 0);
  EXPECT_LE(percent, 100);
  EXPECT_EQ(cuda::device_telemetry(0).utilization_percent.has_value(), true);
}

// In a child process (the configuration is read once, at the allocator's first use).
int print_allocator_settings(int, char**) {
  void* p = cuda::caching_allocator_alloc(512, 0);
  cuda::caching_allocator_delete(p);
  std::printf("max_split_size %lld\nconf %s\n", static_cast<long long>(cuda::memory_stats(0)["max_split_size"]),
              cuda::memory::allocator_settings().text.c_str());
  return 0;
}
const ChildModeRegistrar settings_mode("--print-allocator-settings", print_allocator_settings);

TEST(PublicApiTest, PytorchAllocConfIsReadWhenCudascopeAllocConfIsUnset) {
  CleanEnvironment scoped({"CUDASCOPE_BACKEND"});  // the child inherits this environment
  auto r = run_self({"--print-allocator-settings"}, {"PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("max_split_size " + std::to_string(64 * kMiB)));
  EXPECT_THAT(r.output, ::testing::HasSubstr("conf max_split_size_mb:64"));
  // Both set: CUDASCOPE_ALLOC_CONF wins.
  r = run_self({"--print-allocator-settings"},
               {"CUDASCOPE_ALLOC_CONF=max_split_size_mb:32", "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:64"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("max_split_size " + std::to_string(32 * kMiB)));
  // A bad value names the variable it came from.
  EXPECT_THAT([] { cuda::AllocatorConfig::parse("max_split_size_mb:x", "PYTORCH_CUDA_ALLOC_CONF"); },
              ::testing::ThrowsMessage<cuda::Error>(::testing::HasSubstr("PYTORCH_CUDA_ALLOC_CONF")));
  // Neither: the defaults.
  r = run_self({"--print-allocator-settings"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("max_split_size -1"));
}

}  // namespace
}  // namespace cudascope::testing
