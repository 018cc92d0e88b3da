// The stream sanitizer (sanitizer.h) on the process's backend (sim in CI): races the way
// torch.cuda._sanitizer finds them, and the synchronisation that makes them go away.
#include "test_support.h"

#include <cudascope/cuda/sanitizer.h>

#include <string>

namespace cuda = cudascope::cuda;
namespace sanitizer = cudascope::cuda::sanitizer;
using cudascope::Device;
using cudascope::Tensor;
using cudascope::TensorOptions;
using ::testing::HasSubstr;

namespace {

TensorOptions on_cuda() { return TensorOptions{}.with_device(Device::cuda(0)); }

class SanitizerTest : public ::testing::Test {
 protected:
  void SetUp() override { sanitizer::enable_cuda_sanitizer(sanitizer::OnRace::kPrint); }
  void TearDown() override {
    cuda::synchronize();
    sanitizer::disable_cuda_sanitizer();
  }
  static std::uint64_t races() { return sanitizer::stats().races; }
};

// torch.cuda._sanitizer's documentation example: a = torch.rand(...) on the default stream,
// then a = a * 5 in place on a new stream. Here a.add(a, 4) reads a on the side stream
// (a + 4a = 5a) and copy_ writes the product back into a.
void documented_example(bool fixed) {
  Tensor a = cudascope::rand({10000}, on_cuda());
  cuda::Stream side;
  if (fixed) side.wait_stream(cuda::current_stream());
  cuda::StreamGuard guard(side);
  a.copy_(a.add(a, 4.0));
}

}  // namespace

TEST_F(SanitizerTest, DocumentedExampleRaceIsReportedWithBothAccesses) {
  cuda::Stream side;
  Tensor a = cudascope::rand({10000}, on_cuda());
  {
    cuda::StreamGuard guard(side);
    a.copy_(a.add(a, 4.0));
  }
  const auto found = sanitizer::reports();
  ASSERT_EQ(found.size(), 1u) << "the read by add races the write by rand; copy_ follows add on its stream";
  const sanitizer::RaceReport& race = found.front();
  EXPECT_EQ(race.data_ptr, reinterpret_cast<std::uintptr_t>(a.data_ptr()));
  EXPECT_EQ(race.current.type, sanitizer::Access::Type::kRead);
  EXPECT_EQ(race.current.stream, side.id());
  EXPECT_EQ(race.current.op, "Tensor::add");
  EXPECT_EQ(race.current.arguments, (std::vector<std::string>{"self", "other"}));
  EXPECT_EQ(race.previous.type, sanitizer::Access::Type::kWrite);
  EXPECT_EQ(race.previous.stream, cuda::default_stream().id());
  EXPECT_EQ(race.previous.op, "cudascope::rand");
  EXPECT_TRUE(race.previous.is_output);
  EXPECT_LT(race.previous.seq_num, race.current.seq_num);
  // The stacks come from the allocator's frame-pointer capture, symbolised for the report.
  EXPECT_THAT(race.current.stack, HasSubstr("cudascope::Tensor::add"));
  EXPECT_THAT(race.previous.stack, HasSubstr("cudascope::rand"));
  EXPECT_THAT(race.allocation_stack, HasSubstr("cudascope::rand"));

  const std::string message = race.message();
  const std::string expected_head = "============================\n"
                                    "CSAN detected a possible data race on tensor with data pointer " +
                                    std::to_string(race.data_ptr) + "\nAccess by stream " + std::to_string(side.id()) +
                                    " during kernel:\nTensor::add\nreading from argument(s) self, other\nWith stack trace:\n";
  EXPECT_EQ(message.substr(0, expected_head.size()), expected_head);
  EXPECT_THAT(message, HasSubstr("Previous access by stream " + std::to_string(cuda::default_stream().id()) +
                                 " during kernel:\ncudascope::rand\nwriting to the output\nWith stack trace:\n"));
  EXPECT_THAT(message, HasSubstr("Tensor was allocated with stack trace:\n"));
  EXPECT_EQ(sanitizer::stats().races, 1u);
}

TEST_F(SanitizerTest, DocumentedExampleFixedWithWaitStreamIsSilent) {
  documented_example(/*fixed=*/true);
  EXPECT_EQ(races(), 0u);
  EXPECT_GE(sanitizer::stats().kernels, 3u) << "rand, add and copy_ were all checked";
  documented_example(/*fixed=*/false);
  EXPECT_EQ(races(), 1u) << "the same program without the wait is reported";
}

TEST_F(SanitizerTest, PrintModeWritesTheReportToStderr) {
  ::testing::internal::CaptureStderr();
  documented_example(/*fixed=*/false);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(printed, HasSubstr("CSAN detected a possible data race on tensor with data pointer "));
  EXPECT_THAT(printed, HasSubstr("Previous access by stream "));
}

TEST_F(SanitizerTest, EventRecordedAfterTheWriteOrdersTheOtherStream) {
  Tensor a = cudascope::rand({256}, on_cuda());
  cuda::Event written;
  written.record();
  cuda::Stream side;
  written.wait(side);
  {
    cuda::StreamGuard guard(side);
    a.fill_(1.0);
  }
  EXPECT_EQ(races(), 0u);
}

TEST_F(SanitizerTest, EventRecordedBeforeTheWriteDoesNotOrderIt) {
  Tensor a = cudascope::zeros({256}, on_cuda());
  cuda::Event too_early;
  too_early.record();
  a.fill_(2.0);  // after the record: the event says nothing about it
  cuda::Stream side;
  too_early.wait(side);
  {
    cuda::StreamGuard guard(side);
    a.fill_(3.0);
  }
  ASSERT_EQ(races(), 1u);
  const auto race = sanitizer::reports().front();
  EXPECT_EQ(race.current.type, sanitizer::Access::Type::kWrite);
  EXPECT_EQ(race.previous.op, "Tensor::fill_");
  EXPECT_THAT(race.message(), HasSubstr("writing to argument(s) self\n"));
}

TEST_F(SanitizerTest, HostSynchronizationOrdersEveryStream) {
  cuda::Stream side;
  Tensor a = cudascope::rand({256}, on_cuda());
  cuda::current_stream().synchronize();
  {
    cuda::StreamGuard guard(side);
    a.fill_(1.0);
  }
  cuda::synchronize();
  a.fill_(2.0);
  cuda::Event done = side.record_event();
  {
    cuda::StreamGuard guard(side);
    a.fill_(3.0);  // same stream as the event; the default stream's fill_ is unordered
  }
  EXPECT_EQ(races(), 1u) << "only the last fill_ races (the default stream's fill_ before it)";
  cuda::Stream other;
  {
    cuda::StreamGuard guard(side);
    a.fill_(4.0);
    done = side.record_event();
  }
  done.synchronize();
  {
    cuda::StreamGuard guard(other);
    a.fill_(5.0);
  }
  EXPECT_EQ(races(), 1u) << "event synchronize ordered the other stream after the side stream's write";
}

TEST_F(SanitizerTest, BlockingCopyToHostSynchronizesTheStream) {
  Tensor a = cudascope::rand({64}, on_cuda());
  const std::vector<double> values = a.to_vector();  // a blocking device-to-host copy
  EXPECT_EQ(values.size(), 64u);
  cuda::Stream side;
  {
    cuda::StreamGuard guard(side);
    a.fill_(0.0);
  }
  EXPECT_EQ(races(), 0u);
}

TEST_F(SanitizerTest, ReadsFromSeveralStreamsDoNotRace) {
  Tensor a = cudascope::rand({1024}, on_cuda());
  cuda::Stream first, second;
  first.wait_stream(cuda::current_stream());
  second.wait_stream(cuda::current_stream());
  Tensor s1, s2;
  {
    cuda::StreamGuard guard(first);
    s1 = a.sum();
  }
  {
    cuda::StreamGuard guard(second);
    s2 = a.sum();
  }
  EXPECT_EQ(races(), 0u);
  // A write after both reads must wait for both.
  cuda::current_stream().wait_stream(first);
  a.fill_(0.0);
  ASSERT_EQ(races(), 1u) << "the default stream waited for the first reader only";
  const auto race = sanitizer::reports().front();
  EXPECT_EQ(race.previous.type, sanitizer::Access::Type::kRead);
  EXPECT_EQ(race.previous.stream, second.id());
  EXPECT_EQ(race.previous.op, "Tensor::sum");
}

TEST_F(SanitizerTest, MatmulDeclaresItsOperands) {
  Tensor a = cudascope::rand({8, 8}, on_cuda());
  Tensor b = cudascope::rand({8, 8}, on_cuda());
  cuda::Stream side;
  {
    cuda::StreamGuard guard(side);
    Tensor c = cudascope::matmul(a, b);
  }
  EXPECT_EQ(races(), 2u) << "both inputs were written on the default stream";
  EXPECT_EQ(sanitizer::reports().front().current.op, "cudascope::matmul");
}

TEST_F(SanitizerTest, BlockReusedOnItsStreamStartsFresh) {
  cuda::Stream side;
  cuda::StreamGuard guard(side);
  Tensor x = cudascope::full({4096}, 1.0, on_cuda());
  const void* block = x.data_ptr();
  const std::size_t tracked = sanitizer::stats().tensors;
  x = Tensor();  // freed while its fill_ may still run: reusable on this stream only
  EXPECT_EQ(sanitizer::stats().tensors, tracked - 1) << "a freed block's history is dropped";
  Tensor y = cudascope::empty({4096}, on_cuda());
  ASSERT_EQ(y.data_ptr(), block) << "the allocator reuses the block on the same stream";
  y.fill_(2.0);
  EXPECT_EQ(races(), 0u);
}

TEST_F(SanitizerTest, RecordStreamFreeAndReuseOnAnotherStreamIsNotARace) {
  Tensor x = cudascope::zeros({4096}, on_cuda());
  const void* block = x.data_ptr();
  cuda::Stream side;
  side.wait_stream(cuda::current_stream());
  {
    cuda::StreamGuard guard(side);
    x.fill_(7.0);
  }
  x.record_stream(side);
  x = Tensor();  // the allocator keeps the block until the side stream's work is done
  // Wait without telling the sanitizer (query is not a synchronisation to it): only the
  // allocator's own event check makes the reuse safe.
  while (!side.query()) std::this_thread::yield();
  Tensor y = cudascope::empty({4096}, on_cuda());
  ASSERT_EQ(y.data_ptr(), block) << "the block comes back once the recorded stream's event completed";
  y.fill_(1.0);
  EXPECT_EQ(races(), 0u) << "the new allocation has no history of the side stream's write";
}

TEST_F(SanitizerTest, ThrowModeThrowsBeforeTheKernelRuns) {
  sanitizer::enable_cuda_sanitizer(sanitizer::OnRace::kThrow);
  Tensor a = cudascope::full({16}, 1.0, on_cuda());
  cuda::Stream side;
  cuda::StreamGuard guard(side);
  try {
    a.fill_(9.0);
    FAIL() << "no UnsynchronizedAccessError";
  } catch (const sanitizer::UnsynchronizedAccessError& error) {
    EXPECT_THAT(error.what(), HasSubstr("CSAN detected a possible data race"));
    EXPECT_EQ(error.report().current.op, "Tensor::fill_");
    EXPECT_EQ(error.report().previous.op, "Tensor::fill_");
  }
  cuda::synchronize();
  EXPECT_EQ(a.to_vector(), std::vector<double>(16, 1.0)) << "the racing fill_ was not queued";
}

TEST_F(SanitizerTest, DisabledSanitizerRecordsNothing) {
  sanitizer::disable_cuda_sanitizer();
  EXPECT_FALSE(sanitizer::is_enabled());
  documented_example(/*fixed=*/false);
  const sanitizer::Stats stats = sanitizer::stats();
  EXPECT_EQ(stats.tensors, 0u);
  EXPECT_EQ(stats.streams, 0u);
  EXPECT_EQ(stats.events, 0u);
  EXPECT_EQ(stats.kernels, 0u);
  EXPECT_EQ(stats.races, 0u);
  EXPECT_TRUE(sanitizer::reports().empty());
}

TEST_F(SanitizerTest, TensorsFromBeforeEnableHaveNoHistory) {
  sanitizer::disable_cuda_sanitizer();
  Tensor a = cudascope::rand({128}, on_cuda());
  sanitizer::enable_cuda_sanitizer();
  EXPECT_TRUE(sanitizer::is_enabled());
  cuda::Stream side;
  {
    cuda::StreamGuard guard(side);
    a.fill_(0.0);
  }
  EXPECT_EQ(races(), 0u) << "as CSAN: the write before enable is unknown";
  a.fill_(1.0);
  ASSERT_EQ(races(), 1u);
  EXPECT_EQ(sanitizer::reports().front().allocation_stack, "");
  EXPECT_THAT(sanitizer::reports().front().message(), HasSubstr("Trace for tensor allocation not found."));
}
