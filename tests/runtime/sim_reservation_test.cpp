// The sim device's address space (issue 25): when the process cannot reserve it (ulimit -v),
// the first allocation fails with an error naming CUDASCOPE_SIM_MEMORY, never with the
// OutOfMemoryError that a replay would count as a full device and carry on from.
// Each case runs in a child forked before any sim device exists, under its own limit.
#include <cudascope/cuda.h>

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace cudascope {
namespace {

constexpr rlim_t kAddressSpaceLimit = rlim_t{4} << 30;  // ulimit -v 4G

struct ChildResult {
  int exit_code = -1;
  std::string message;
};

// Runs `body` in a child under the address-space limit; what it writes to the pipe comes back.
template <typename Body>
ChildResult in_limited_child(const char* sim_memory, Body body) {
  int out[2];
  if (pipe(out) != 0) return {};
  const pid_t pid = fork();
  if (pid == 0) {
    close(out[0]);
    setenv("CUDASCOPE_BACKEND", "sim", 1);
    if (sim_memory != nullptr) setenv("CUDASCOPE_SIM_MEMORY", sim_memory, 1);
    const rlimit limit{kAddressSpaceLimit, kAddressSpaceLimit};
    setrlimit(RLIMIT_AS, &limit);
    const std::string message = body();
    (void)!write(out[1], message.data(), message.size());
    _exit(message.rfind("ok", 0) == 0 ? 0 : 1);
  }
  close(out[1]);
  ChildResult result;
  char buffer[4096];
  for (ssize_t n; (n = read(out[0], buffer, sizeof buffer)) > 0;) result.message.append(buffer, n);
  close(out[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string allocate_once() {
  try {
    void* p = cuda::caching_allocator_alloc(1 << 20, 0);
    cuda::caching_allocator_delete(p);
    return "ok";
  } catch (const cuda::OutOfMemoryError& e) {
    return std::string("out of memory: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("error: ") + e.what();
  }
}

TEST(SimReservationTest, FailedReservationIsAnErrorNamingTheSettingNotAnOom) {
  const ChildResult r = in_limited_child("16GiB", allocate_once);
  EXPECT_EQ(r.exit_code, 1) << r.message;
  EXPECT_EQ(r.message.rfind("error: ", 0), 0u) << r.message;
  EXPECT_NE(r.message.find("CUDASCOPE_SIM_MEMORY"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("ulimit -v"), std::string::npos) << r.message;
}

TEST(SimReservationTest, ASmallerCapacityFitsUnderTheSameLimit) {
  const ChildResult r = in_limited_child("256MiB", allocate_once);
  EXPECT_EQ(r.exit_code, 0) << r.message;
}

}  // namespace
}  // namespace cudascope
