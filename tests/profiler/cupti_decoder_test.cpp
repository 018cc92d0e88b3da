// CUPTI record decoding from activity buffers built by hand: no GPU, CUPTI's own record
// iterator walks them as it walks a driver-filled buffer.
#include <cudascope/profiler/cupti_decoder.h>

#include "cupti_records.h"

#include <cupti.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace cudascope::profiler;

namespace {

// A buffer of CUPTI records laid out as CUPTI lays them out (each 8-byte aligned).
class ActivityBuffer {
 public:
  template <typename T>
  T& add(CUpti_ActivityKind kind) {
    bytes_.reserve(1 << 16);  // references handed out stay valid
    const std::size_t offset = bytes_.size();
    bytes_.resize(offset + (sizeof(T) + 7) / 8 * 8, 0);
    auto* record = reinterpret_cast<T*>(bytes_.data() + offset);
    record->kind = kind;
    offsets_.push_back(offset);
    return *record;
  }
  std::uint8_t* data() { return bytes_.data(); }
  std::size_t size() const { return bytes_.size(); }

 private:
  std::vector<std::uint8_t> bytes_ = std::vector<std::uint8_t>();
  std::vector<std::size_t> offsets_;
};

class TestDecoder : public CuptiDecoder {
 protected:
  const char* api_name(bool runtime, std::uint32_t callback_id) override {
    names_.push_back((runtime ? "runtime#" : "driver#") + std::to_string(callback_id));
    return names_.back().c_str();
  }
  std::vector<std::string> names_ = std::vector<std::string>(0);

 public:
  TestDecoder() { names_.reserve(64); }
};

std::vector<Record> decode(CuptiDecoder& decoder, ActivityBuffer& buffer) {
  std::vector<Record> out;
  decoder.decode(buffer.data(), buffer.size(), [&](const Record* records, std::size_t count) {
    out.insert(out.end(), records, records + count);
  });
  return out;
}

}  // namespace

TEST(CuptiDecoderTest, KernelRecordKeepsTimesGridBlockRegistersSharedMemoryStreamAndCorrelation) {
  ActivityBuffer buffer;
  auto& k = buffer.add<cudascope::profiler::detail::CuptiKernelRecord>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.start = 1000;
  k.end = 4500;
  k.deviceId = 1;
  k.streamId = 7;
  k.correlationId = 42;
  k.gridX = 128, k.gridY = 2, k.gridZ = 1;
  k.blockX = 256, k.blockY = 1, k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  k.name = "_Z6vecAddPfS_S_i";
  TestDecoder decoder;
  const auto records = decode(decoder, buffer);
  ASSERT_EQ(records.size(), 1u);
  const Record& r = records[0];
  EXPECT_EQ(r.kind, RecordKind::kKernel);
  EXPECT_EQ(r.start_ns, 1000u);
  EXPECT_EQ(r.end_ns, 4500u);
  EXPECT_EQ(r.device, 1);
  EXPECT_EQ(r.stream, 7);
  EXPECT_EQ(r.correlation_id, 42u);
  EXPECT_EQ(r.u.kernel.grid[0], 128);
  EXPECT_EQ(r.u.kernel.grid[1], 2);
  EXPECT_EQ(r.u.kernel.block[0], 256);
  EXPECT_EQ(r.u.kernel.registers_per_thread, 32);
  EXPECT_EQ(r.u.kernel.static_shared_memory, 1024);
  EXPECT_EQ(r.u.kernel.dynamic_shared_memory, 2048);
  EXPECT_STREQ(r.u.kernel.name, "_Z6vecAddPfS_S_i");
}

TEST(CuptiDecoderTest, CopiesFillsSyncsAndApiCallsDecodeWithTheirKindSpecificFields) {
  ActivityBuffer buffer;
  auto& api = buffer.add<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  api.cbid = 211;
  api.start = 10, api.end = 20, api.threadId = 777, api.correlationId = 5, api.processId = 99;
  auto& driver = buffer.add<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_DRIVER);
  driver.cbid = 307;
  driver.correlationId = 6;
  auto& copy = buffer.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = 1 << 20;
  copy.deviceId = 0, copy.streamId = 3, copy.correlationId = 5, copy.start = 30, copy.end = 90;
  auto& peer = buffer.add<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
  peer.bytes = 4096;
  peer.srcDeviceId = 0, peer.dstDeviceId = 1, peer.deviceId = 1, peer.start = 40, peer.end = 60;
  auto& fill = buffer.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  fill.bytes = 512, fill.value = 0xab, fill.streamId = 3, fill.start = 95, fill.end = 99;
  auto& context = buffer.add<cudascope::profiler::detail::CuptiContextRecord>(CUPTI_ACTIVITY_KIND_CONTEXT);
  context.contextId = 11, context.deviceId = 2;
  auto& sync = buffer.add<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sync.contextId = 11, sync.streamId = 3, sync.start = 100, sync.end = 150, sync.correlationId = 8;
  TestDecoder decoder;
  const auto records = decode(decoder, buffer);
  ASSERT_EQ(records.size(), 7u);
  EXPECT_EQ(records[0].kind, RecordKind::kRuntimeApi);
  EXPECT_STREQ(records[0].u.api.name, "runtime#211");
  EXPECT_EQ(records[0].thread_id, 777u);
  EXPECT_EQ(records[0].correlation_id, 5u);
  EXPECT_EQ(records[1].kind, RecordKind::kDriverApi);
  EXPECT_STREQ(records[1].u.api.name, "driver#307");
  EXPECT_EQ(records[2].kind, RecordKind::kMemcpy);
  EXPECT_EQ(static_cast<CopyKindCode>(records[2].detail), CopyKindCode::kHtoD);
  EXPECT_EQ(records[2].u.copy.bytes, 1u << 20);
  EXPECT_EQ(records[2].u.copy.src_device, -1);
  EXPECT_EQ(records[2].u.copy.dst_device, 0);
  EXPECT_EQ(static_cast<CopyKindCode>(records[3].detail), CopyKindCode::kPtoP);
  EXPECT_EQ(records[3].u.copy.src_device, 0);
  EXPECT_EQ(records[3].u.copy.dst_device, 1);
  EXPECT_EQ(records[4].kind, RecordKind::kMemset);
  EXPECT_EQ(records[4].u.memset.value, 0xabu);
  EXPECT_EQ(records[5].kind, RecordKind::kContext);
  EXPECT_EQ(records[6].kind, RecordKind::kSync);
  EXPECT_EQ(static_cast<SyncType>(records[6].detail), SyncType::kStream);
  EXPECT_EQ(records[6].device, 2) << "the sync's device comes from its context record";
  EXPECT_EQ(records[6].stream, 3);
}

TEST(CuptiDecoderTest, MarkerDataAttachesColourCategoryAndPayloadToItsMarker) {
  ActivityBuffer buffer;
  auto& start = buffer.add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  start.id = 9, start.timestamp = 100, start.name = "forward";
  start.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  start.objectId.pt.threadId = 1234;
  auto& data = buffer.add<CUpti_ActivityMarkerData2>(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  data.id = 9;
  data.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
  data.color = 0xff00ff00;
  data.category = 3;
  data.payloadKind = CUPTI_METRIC_VALUE_KIND_UINT64;
  data.payload.metricValueUint64 = 77;
  auto& end = buffer.add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  end.id = 9, end.timestamp = 300;
  TestDecoder decoder;
  const auto records = decode(decoder, buffer);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, RecordKind::kNvtxRangeStart);
  EXPECT_EQ(records[0].stream, 9);
  EXPECT_EQ(record_text(records[0], nullptr, 0), "forward");
  EXPECT_EQ(records[0].thread_id, 1234u);
  EXPECT_TRUE(records[0].u.nvtx.has_color);
  EXPECT_EQ(records[0].u.nvtx.color, 0xff00ff00u);
  EXPECT_EQ(records[0].u.nvtx.category, 3u);
  EXPECT_EQ(records[0].u.nvtx.payload_kind, NvtxPayloadKind::kUint64);
  EXPECT_EQ(records[0].u.nvtx.payload, 77u);
  EXPECT_EQ(records[1].kind, RecordKind::kNvtxRangeEnd);
  EXPECT_EQ(records[1].stream, 9);
  EXPECT_EQ(records[1].start_ns, 300u);
}

TEST(CuptiDecoderTest, ExternalCorrelationAndOverheadDecodeAndUnmodelledKindsAreCountedNotMisread) {
  ActivityBuffer buffer;
  auto& external = buffer.add<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  external.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  external.externalId = 123456789012ULL;
  external.correlationId = 17;
  buffer.add<CUpti_ActivityCudaEvent2>(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
  auto& overhead = buffer.add<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  overhead.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  overhead.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  overhead.objectId.pt.threadId = 55;
  overhead.start = 5, overhead.end = 8;
  TestDecoder decoder;
  const auto records = decode(decoder, buffer);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, RecordKind::kExternalCorrelation);
  EXPECT_EQ(records[0].u.external.external_id, 123456789012ULL);
  EXPECT_EQ(records[0].correlation_id, 17u);
  EXPECT_EQ(records[1].kind, RecordKind::kOverhead);
  EXPECT_EQ(records[1].thread_id, 55u);
  EXPECT_STREQ(records[1].u.overhead.name, "CUPTI buffer flush");
  EXPECT_EQ(decoder.skipped(), 1u);
}

TEST(CuptiDecoderTest, RealApiNamesComeFromCuptiWithoutTheVersionSuffix) {
  ActivityBuffer buffer;
  auto& api = buffer.add<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  CuptiDecoder decoder;
  const auto records = decode(decoder, buffer);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_STREQ(records[0].u.api.name, "cudaLaunchKernel");
}

TEST(CuptiDecoderTest, DeviceMemoryRecordsTallyWhatEachDeviceHoldsAndSkipHostMemory) {
  ActivityBuffer buffer;
  auto add = [&](CUpti_ActivityMemoryOperationType op, CUpti_ActivityMemoryKind memory_kind, std::uint32_t device,
                 std::uint64_t address, std::uint64_t bytes, std::uint64_t t) {
    auto& m = buffer.add<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
    m.memoryOperationType = op;
    m.memoryKind = memory_kind;
    m.deviceId = device;
    m.address = address;
    m.bytes = bytes;
    m.timestamp = t;
  };
  constexpr auto kAlloc = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  constexpr auto kRelease = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  add(kAlloc, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0x7f0000000000, 2 << 20, 10);
  add(kAlloc, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 1, 0x7e0000000000, 20 << 20, 11);
  add(kAlloc, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0, 0x600000000000, 1 << 20, 12);  // host memory: not held
  add(kAlloc, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0x7f0000200000, 512, 13);
  add(kRelease, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0, 0x7f0000000000, 2 << 20, 14);
  TestDecoder decoder;
  const auto records = decode(decoder, buffer);
  ASSERT_EQ(records.size(), 4u);
  const std::uint64_t held[] = {2 << 20, 20 << 20, (2 << 20) + 512, 512};
  const int devices[] = {0, 1, 0, 0};
  for (std::size_t i = 0; i < records.size(); ++i) {
    EXPECT_EQ(records[i].kind, RecordKind::kDeviceMemory);
    EXPECT_EQ(records[i].device, devices[i]) << i;
    EXPECT_EQ(records[i].u.device_memory.held_bytes, held[i]) << i;
  }
  EXPECT_EQ(records[3].detail, 1) << "a release";
  EXPECT_EQ(records[3].u.device_memory.address, 0x7f0000000000u);
  EXPECT_EQ(records[3].start_ns, 14u);
  EXPECT_EQ(decoder.skipped(), 1u) << "the pinned host allocation";
}

// A forced flush hands over records of work still running, which CUPTI says may hold 0
// timestamps: such kernels, copies and memsets are counted, not passed on (one at time 0, or
// lasting 2^64 ns, would wreck a timeline and the GPU time summed from it).
TEST(CuptiDecoderTest, WorkWithAZeroOrBackwardTimeIsCountedIncompleteNotPassedOn) {
  ActivityBuffer buffer;
  auto& whole = buffer.add<cudascope::profiler::detail::CuptiKernelRecord>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  whole.start = 1000, whole.end = 2000, whole.name = "whole";
  auto& unstarted = buffer.add<cudascope::profiler::detail::CuptiKernelRecord>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  unstarted.start = 0, unstarted.end = 0, unstarted.name = "still_running";
  auto& backward = buffer.add<cudascope::profiler::detail::CuptiKernelRecord>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  backward.start = 5000, backward.end = 0, backward.name = "no_end";
  auto& copy = buffer.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.start = 0, copy.end = 0, copy.bytes = 64;
  auto& set = buffer.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  set.start = 3000, set.end = 3000, set.bytes = 32;  // an instant is whole
  TestDecoder decoder;
  const auto records = decode(decoder, buffer);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].kind, RecordKind::kKernel);
  EXPECT_STREQ(records[0].u.kernel.name, "whole");
  EXPECT_EQ(records[1].kind, RecordKind::kMemset);
  EXPECT_EQ(decoder.incomplete(), 3u);
  EXPECT_EQ(decoder.skipped(), 0u);
}
