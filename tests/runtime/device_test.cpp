#include "test_support.h"

#include "arch_list.h"
#include "backend/backend.h"
#include "runtime_state.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <stdexcept>

namespace cuda = cudascope::cuda;

TEST(DeviceTest, IsAvailableWithDevices) {
  ASSERT_TRUE(cuda::is_available()) << "backend " << cuda::backend_name();
  EXPECT_GE(cuda::device_count(), 1);
  cuda::init();
  EXPECT_TRUE(cuda::is_initialized());
}

TEST(DeviceTest, PropertiesAreConsistent) {
  const cuda::DeviceProperties props = cuda::get_device_properties(0);
  EXPECT_FALSE(props.name.empty());
  EXPECT_GT(props.total_memory, 0u);
  EXPECT_GT(props.multi_processor_count, 0);
  EXPECT_EQ(cuda::get_device_capability(0), std::make_pair(props.major, props.minor));
  EXPECT_EQ(cuda::get_device_name(0), props.name);
  EXPECT_EQ(props.uuid_string().size(), 40u);
  EXPECT_EQ(props.uuid_string().rfind("GPU-", 0), 0u);
}

TEST(DeviceTest, MemGetInfoReportsFreeWithinTotal) {
  const auto [free_bytes, total_bytes] = cuda::mem_get_info(0);
  EXPECT_GT(total_bytes, 0u);
  EXPECT_LE(free_bytes, total_bytes);
  EXPECT_EQ(total_bytes, cuda::get_device_properties(0).total_memory);
}

TEST(DeviceTest, SetDeviceChangesCurrentDevice) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  cuda::set_device(1);
  EXPECT_EQ(cuda::current_device(), 1);
  cuda::set_device(0);
  EXPECT_EQ(cuda::current_device(), 0);
}

TEST(DeviceTest, CurrentDeviceIsPerThread) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  cuda::set_device(1);
  int seen_in_other_thread = -1;
  std::thread([&] { seen_in_other_thread = cuda::current_device(); }).join();
  EXPECT_EQ(seen_in_other_thread, 0);
  cuda::set_device(0);
}

TEST(DeviceTest, InvalidDeviceIndexIsAnErrorNamingIt) {
  try {
    cuda::set_device(99);
    FAIL() << "set_device(99) did not throw";
  } catch (const cuda::Error& e) {
    EXPECT_EQ(e.code(), cuda::error_code::kInvalidDevice);
    EXPECT_THAT(e.what(), ::testing::HasSubstr("device index 99"));
  }
  EXPECT_EQ(cuda::current_device(), 0);
}

TEST(DeviceGuardTest, RestoresDeviceAtScopeExit) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  {
    cuda::DeviceGuard guard(1);
    EXPECT_EQ(cuda::current_device(), 1);
    EXPECT_EQ(guard.original_device(), 0);
  }
  EXPECT_EQ(cuda::current_device(), 0);
}

TEST(DeviceGuardTest, RestoresDeviceOnException) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  try {
    cuda::DeviceGuard guard(1);
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(cuda::current_device(), 0);
}

TEST(DeviceGuardTest, NegativeIndexIsANoOp) {
  cuda::DeviceGuard guard(-1);
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_EQ(guard.original_device(), -1);
}

TEST(DeviceGuardTest, InvalidIndexFailsAtFirstUseAndIsRestored) {
  {
    cuda::DeviceGuard guard(42);
    EXPECT_THROW(cuda::synchronize(), cuda::Error);
  }
  EXPECT_EQ(cuda::current_device(), 0);
  EXPECT_NO_THROW(cuda::synchronize());
}

TEST(DeviceTest, PeerAccessBetweenDistinctDevices) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  EXPECT_FALSE(cuda::can_device_access_peer(0, 0));
  if (cudascope::testing::on_cuda_backend()) {
    EXPECT_EQ(cuda::can_device_access_peer(0, 1), cuda::can_device_access_peer(1, 0));
  } else {
    EXPECT_TRUE(cuda::can_device_access_peer(0, 1));
  }
}

TEST(DeviceTest, ArchListMatchesGencodeFlags) {
  const auto archs = cuda::get_arch_list();
  const std::string flags = cuda::get_gencode_flags();
#ifdef CUDASCOPE_HAVE_CUDA
  ASSERT_FALSE(archs.empty());
  for (const auto& arch : archs) {
    EXPECT_TRUE(arch.starts_with("sm_") || arch.starts_with("compute_")) << arch;
    const std::string number = arch.substr(arch.find('_') + 1);
    EXPECT_THAT(flags, ::testing::HasSubstr("-gencode compute=compute_" + number + ",code=" + arch));
  }
#else
  EXPECT_TRUE(archs.empty());
  EXPECT_TRUE(flags.empty());
#endif
}

TEST(ArchListTest, ParsesCMakesEntriesAsTorchNamesThem) {
  using ::testing::ElementsAre;
  EXPECT_THAT(cuda::detail::parse_arch_list("75,80-real,90-virtual"),
              ElementsAre("sm_75", "compute_75", "sm_80", "compute_90"));
  EXPECT_THAT(cuda::detail::parse_arch_list("90a-real"), ElementsAre("sm_90a"));
  EXPECT_THAT(cuda::detail::parse_arch_list(",,86,"), ElementsAre("sm_86", "compute_86"));
  EXPECT_TRUE(cuda::detail::parse_arch_list("").empty());
}

TEST(ArchListTest, DeviceBinariesRunOnLaterMinorsOfTheirMajorAndPtxOnAnyLaterDevice) {
  using cuda::detail::arch_runs_on;
  EXPECT_TRUE(arch_runs_on("sm_80", 8, 0));
  EXPECT_TRUE(arch_runs_on("sm_80", 8, 9));   // an L4 runs an A100's binary
  EXPECT_FALSE(arch_runs_on("sm_86", 8, 0));  // not an earlier minor
  EXPECT_FALSE(arch_runs_on("sm_80", 9, 0));  // nor another major
  EXPECT_FALSE(arch_runs_on("sm_90", 7, 5));
  EXPECT_TRUE(arch_runs_on("compute_75", 7, 5));
  EXPECT_TRUE(arch_runs_on("compute_75", 12, 0));  // the driver compiles PTX for later devices
  EXPECT_FALSE(arch_runs_on("compute_80", 7, 5));
  EXPECT_TRUE(arch_runs_on("sm_90a", 9, 0));
  EXPECT_FALSE(arch_runs_on("sm_100a", 10, 3));  // an architecture's own features: for it alone
  EXPECT_TRUE(arch_runs_on("sm_100f", 10, 3));   // a family's: its later members too
  EXPECT_FALSE(arch_runs_on("sm_9x", 9, 0));
  EXPECT_FALSE(arch_runs_on("gfx90a", 9, 0));
}

TEST(ArchListTest, TheDefaultArchitecturesRunOnEveryGenerationFromTuring) {
  const auto archs = cuda::detail::parse_arch_list(CUDASCOPE_DEFAULT_CUDA_ARCHITECTURES);
  for (auto [major, minor] : {std::pair{7, 5}, {8, 0}, {8, 6}, {8, 9}, {9, 0}, {10, 0}, {12, 0}, {13, 0}}) {
    EXPECT_TRUE(cuda::detail::archs_run_on(archs, major, minor))
        << major << "." << minor << " with " << CUDASCOPE_DEFAULT_CUDA_ARCHITECTURES;
  }
  EXPECT_FALSE(cuda::detail::archs_run_on(archs, 7, 0)) << "Volta: not built for";
}

TEST(ArchListTest, AdviceNamesTheBuildsCodeAndTheSettingTheDeviceNeeds) {
  const std::string advice = cuda::detail::no_kernel_image_advice({"sm_80", "sm_90"}, 7, 5);
  EXPECT_THAT(advice, ::testing::HasSubstr("sm_80, sm_90"));
  EXPECT_THAT(advice, ::testing::HasSubstr("compute capability 7.5"));
  EXPECT_THAT(advice, ::testing::HasSubstr("-DCMAKE_CUDA_ARCHITECTURES=75"));
  EXPECT_THAT(cuda::detail::no_kernel_image_advice({}, 8, 6), ::testing::HasSubstr("(none)"));
}

TEST(SyncDebugTest, WarnModePrintsOneWarningPerSynchronizingCall) {
  cuda::set_sync_debug_mode("warn");
  ::testing::internal::CaptureStderr();
  cuda::synchronize();
  cuda::current_stream().synchronize();
  const std::string printed = ::testing::internal::GetCapturedStderr();
  cuda::set_sync_debug_mode(0);
  EXPECT_THAT(printed, ::testing::HasSubstr("cudaDeviceSynchronize"));
  EXPECT_THAT(printed, ::testing::HasSubstr("cudaStreamSynchronize"));
  EXPECT_EQ(std::count(printed.begin(), printed.end(), '\n'), 2);
}

TEST(SyncDebugTest, ErrorModeThrowsOnSynchronizingCall) {
  cuda::set_sync_debug_mode(2);
  EXPECT_EQ(cuda::get_sync_debug_mode(), 2);
  EXPECT_THROW(cuda::synchronize(), cuda::Error);
  cuda::Event event;
  event.record();
  EXPECT_THROW(event.synchronize(), cuda::Error);
  cuda::set_sync_debug_mode("default");
  EXPECT_NO_THROW(cuda::synchronize());
}

TEST(SyncDebugTest, RejectsUnknownModes) {
  EXPECT_THROW(cuda::set_sync_debug_mode(3), cuda::Error);
  EXPECT_THROW(cuda::set_sync_debug_mode("loud"), cuda::Error);
  EXPECT_EQ(cuda::get_sync_debug_mode(), 0);
}

TEST(ForkTest, ChildForkedAfterInitCannotUseTheRuntime) {
  cuda::init();
  const int parent_count = cuda::device_count();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // As torch: the count still answers in the child (it initialises nothing), is_initialized
    // is false, and whatever needs the runtime throws.
    if (cuda::device_count() != parent_count || !cuda::is_available()) _exit(4);
    if (cuda::is_initialized()) _exit(5);
    try {
      cuda::current_device();
      _exit(1);  // should have thrown
    } catch (const cuda::Error& e) {
      _exit(std::string(e.what()).find("Cannot re-initialize CUDA in forked subprocess") != std::string::npos ? 0 : 2);
    } catch (...) {
      _exit(3);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: no error, 2: wrong message, 3: wrong exception type, 4: the count "
                                       "changed or threw, 5: is_initialized() true in the child";
  EXPECT_NO_THROW(cuda::device_count());  // the parent is unaffected
}

namespace {
// Child, in a fresh process: asking is_available / device_count / is_initialized initialises
// nothing, and a child forked after asking allocates (exit codes name what failed).
int count_without_init_child(int, char**) {
  if (cuda::is_initialized()) return 2;
  if (!cuda::is_available() || cuda::device_count() < 1) return 3;
  if (cuda::is_initialized()) return 4;
  const pid_t pid = fork();
  if (pid < 0) return 5;
  if (pid == 0) {
    try {
      void* p = cuda::caching_allocator_alloc(1 << 20);
      const bool counted = cuda::memory_allocated() == (1 << 20);
      cuda::caching_allocator_delete(p);
      cuda::synchronize();
      _exit(counted && cuda::is_initialized() ? 0 : 6);
    } catch (const std::exception& e) {
      std::printf("forked child: %s\n", e.what());
      std::fflush(stdout);
      _exit(7);
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return 8;
  if (WEXITSTATUS(status) != 0) return 10 + WEXITSTATUS(status);
  cuda::init();
  return cuda::is_initialized() ? 0 : 9;
}
const cudascope::testing::ChildModeRegistrar count_without_init_mode{"--count-without-init-child",
                                                                     &count_without_init_child};
}  // namespace

TEST(LazyInitTest, CountingInitialisesNothingAndAForkedChildStillAllocates) {
  const auto r = cudascope::testing::run_self({"--count-without-init-child"});
  EXPECT_EQ(r.exit_code, 0) << "2: initialised at start, 3: no device, 4: initialised by asking, 16/17: the child "
                               "forked after asking could not allocate\n"
                            << r.output;
}

TEST(LazyInitTest, VisibleDevicesAreReadAsTorchReadsThem) {
  using cuda::detail::visible_device_count;
  EXPECT_EQ(visible_device_count(nullptr, 4), 4);
  EXPECT_EQ(visible_device_count(nullptr, 100), 64);
  EXPECT_EQ(visible_device_count("1,0", 4), 2);
  EXPECT_EQ(visible_device_count(" 2 , 3", 4), 2);
  EXPECT_EQ(visible_device_count("1gpu,2", 4), 2);    // strtoul's reading: the leading digits
  EXPECT_EQ(visible_device_count("0,5,1", 4), 1);     // cut at the first ordinal the machine lacks
  EXPECT_EQ(visible_device_count("0,-1,2", 4), 1);    // a negative ordinal ends the list
  EXPECT_EQ(visible_device_count("0,x,2", 4), 1);     // so does one that is not a number
  EXPECT_EQ(visible_device_count("0,1,0", 4), 0);     // a repeated ordinal hides every device
  EXPECT_EQ(visible_device_count("", 4), 0);
  EXPECT_EQ(visible_device_count("GPU-5a3c", 4), -1);  // UUIDs: the driver is asked instead
  EXPECT_EQ(visible_device_count("MIG-1234", 4), -1);
}

// A raw cudaSetDevice in other code (here the backend's own set_device, which is exactly
// cudaSetDevice on the cuda backend) is seen by every later call on "the current device".
TEST(DeviceStateTest, DeviceChangedBehindTheRuntimesBackIsUsed) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  cuda::init();
  ASSERT_EQ(cuda::current_device(), 0);
  cuda::detail::backend().set_device(1);
  EXPECT_EQ(cuda::current_device(), 1);
  EXPECT_EQ(cuda::Stream().device_index(), 1);
  EXPECT_EQ(cuda::current_stream().device_index(), 1);
  const std::int64_t before0 = cuda::memory_allocated(0), before1 = cuda::memory_allocated(1);
  void* p = cuda::caching_allocator_alloc(1 << 20);
  EXPECT_EQ(cuda::memory_allocated(1) - before1, 1 << 20);
  EXPECT_EQ(cuda::memory_allocated(0), before0);
  cuda::caching_allocator_delete(p);
  {
    cuda::DeviceGuard guard(0);
    EXPECT_EQ(guard.original_device(), 1);
    EXPECT_EQ(cuda::detail::backend().current_device(), 0);
  }
  EXPECT_EQ(cuda::detail::backend().current_device(), 1) << "the guard restored a stale device";
  cuda::detail::backend().set_device(0);
  EXPECT_EQ(cuda::current_device(), 0);
}

TEST(DeviceStateTest, SetDeviceReachesTheBackend) {
  CUDASCOPE_REQUIRE_DEVICES(2);
  cuda::set_device(1);
  EXPECT_EQ(cuda::detail::backend().current_device(), 1);
  cuda::set_device(0);
  EXPECT_EQ(cuda::detail::backend().current_device(), 0);
}

namespace {
// Child: with CUDA_LAUNCH_BLOCKING=1 a launch returns only once the kernel has finished.
int launch_blocking_child(int, char**) {
  cuda::Stream stream;
  cuda::busy_wait(std::chrono::milliseconds(200), stream);
  return stream.query() ? 0 : 1;
}
const cudascope::testing::ChildModeRegistrar launch_blocking_mode{"--launch-blocking-child", &launch_blocking_child};
}  // namespace

TEST(LaunchBlockingTest, LaunchesSynchroniseWhenSet) {
  EXPECT_EQ(cudascope::testing::run_self({"--launch-blocking-child"}, {"CUDA_LAUNCH_BLOCKING=1"}).exit_code, 0);
  EXPECT_EQ(cudascope::testing::run_self({"--launch-blocking-child"}, {"CUDA_LAUNCH_BLOCKING=0"}).exit_code, 1);
}
