// NCCL's NVTX ranges: the communicator read from their extended payload (nccl_nvtx.h), and the
// NVTX handlers writing it as the range's payload, called as a program's NVTX calls them.
#include "nccl_nvtx.h"

#include "nccl_nvtx_support.h"

#include <cudascope/profiler/nvtx_injection.h>
#include <cudascope/profiler/record.h>
#include <cudascope/profiler/session.h>
#include <cudascope/profiler/trace_sink.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

using namespace cudascope::profiler;
using cudascope::profiler::detail::nccl_communicator_of;
using namespace cudascope::profiler::testing;

namespace {

constexpr std::uint64_t kCommHash = 0x9e3779b97f4a7c15;

const AllReducePayload kAllReduce{kCommHash, 4096, 0};

TEST(NcclNvtxPayloadTest, TheCommunicatorIsTheFirstEightBytesOfTheFirstPayload) {
  NcclAttributes all_reduce(kAllReduceSchema, &kAllReduce, sizeof kAllReduce);
  EXPECT_EQ(nccl_communicator_of(&all_reduce.attributes), kCommHash);
  const std::uint64_t all_gather[2] = {kCommHash + 1, 4096};  // {comm, bytes}
  NcclAttributes gather(kAllGatherSchema, all_gather, sizeof all_gather);
  EXPECT_EQ(nccl_communicator_of(&gather.attributes), kCommHash + 1);
}

TEST(NcclNvtxPayloadTest, MissingPointersAndOtherPayloadTypesAreRejected) {
  EXPECT_EQ(nccl_communicator_of(nullptr), std::nullopt);
  NcclAttributes plain(kAllReduceSchema, &kAllReduce, sizeof kAllReduce);
  plain.attributes.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  EXPECT_EQ(nccl_communicator_of(&plain.attributes), std::nullopt) << "a plain uint64 payload is no payload array";
  NcclAttributes no_entries(kAllReduceSchema, &kAllReduce, sizeof kAllReduce);
  no_entries.attributes.reserved0 = 0;
  EXPECT_EQ(nccl_communicator_of(&no_entries.attributes), std::nullopt);
  NcclAttributes no_array(kAllReduceSchema, &kAllReduce, sizeof kAllReduce);
  no_array.attributes.payload.ullValue = 0;
  EXPECT_EQ(nccl_communicator_of(&no_array.attributes), std::nullopt);
  NcclAttributes no_payload(kAllReduceSchema, nullptr, sizeof kAllReduce);
  EXPECT_EQ(nccl_communicator_of(&no_payload.attributes), std::nullopt);
}

TEST(NcclNvtxPayloadTest, PayloadsTooShortToHoldTheCommunicatorAreRejected) {
  NcclAttributes tiny(kAllReduceSchema, &kAllReduce, 4);
  EXPECT_EQ(nccl_communicator_of(&tiny.attributes), std::nullopt) << "under 8 bytes";
  NcclAttributes unknown_size(kAllReduceSchema, &kAllReduce, SIZE_MAX);
  EXPECT_EQ(nccl_communicator_of(&unknown_size.attributes), std::nullopt);
  // NCCL 2.22-2.24: the same schema id, the message size where 2.25 has the communicator.
  const OldAllReducePayload old{kCommHash, 0};
  NcclAttributes before_2_25(kAllReduceSchema, &old, sizeof old);
  EXPECT_EQ(nccl_communicator_of(&before_2_25.attributes), std::nullopt) << "the message size is no communicator";
  const std::uint64_t message_size = 4096;
  NcclAttributes old_all_gather(kAllGatherSchema, &message_size, sizeof message_size);
  EXPECT_EQ(nccl_communicator_of(&old_all_gather.attributes), std::nullopt);
}

TEST(NcclNvtxPayloadTest, OtherSchemasAndNcclsNullCommunicatorAreRejected) {
  NcclAttributes comm_init(kNcclSchemaBase + 0, &kAllReduce, sizeof kAllReduce);  // ncclCommInitRank: no collective
  EXPECT_EQ(nccl_communicator_of(&comm_init.attributes), std::nullopt);
  NcclAttributes raw(NVTX_TYPE_PAYLOAD_SCHEMA_RAW, &kAllReduce, sizeof kAllReduce);
  EXPECT_EQ(nccl_communicator_of(&raw.attributes), std::nullopt);
  const AllReducePayload null_comm{0, 4096, 0};  // NCCL writes `comm ? comm->commHash : 0`
  NcclAttributes without(kAllReduceSchema, &null_comm, sizeof null_comm);
  EXPECT_EQ(nccl_communicator_of(&without.attributes), std::nullopt);
}

SessionOptions sim_options() {
  SessionOptions options;
  options.source = SourceKind::kSim;
  options.flush_interval = std::chrono::milliseconds(20);
  return options;
}

std::vector<Record> records_of(const Session& session) {
  MemorySink sink;
  session.export_to(sink);
  return sink.records();
}

std::vector<Record> pushes_of(const Session& session) {
  std::vector<Record> out;
  for (const Record& r : records_of(session)) {
    if (r.kind == RecordKind::kNvtxPush) out.push_back(r);
  }
  return out;
}

// The NVTX handlers installed into a program's NVTX instance, recording through a session on
// the sim backend. Each test runs in its own process (gtest_discover_tests), so the handlers
// installed here replace no other test's NVTX.
class NcclNvtxHandlerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(nvtx.install());
    session.start();
  }
  FakeNvtxInstance nvtx;
  Session session{sim_options()};
};

TEST_F(NcclNvtxHandlerTest, AnNcclRangeCarriesItsCommunicatorAsPayloadAndOtherDomainsDoNot) {
  EXPECT_FALSE(detail::nccl_in_process());
  const nvtxDomainHandle_t nccl = nvtx.create_domain("NCCL");
  const nvtxDomainHandle_t other = nvtx.create_domain("other library");
  EXPECT_TRUE(detail::nccl_in_process());
  NcclAttributes all_reduce(kAllReduceSchema, &kAllReduce, sizeof kAllReduce);
  nvtx.push(nccl, all_reduce.attributes);
  EXPECT_EQ(detail::nccl_communicator_on_this_thread(), kCommHash) << "what the CUPTI launch callback reads";
  nvtx.pop(nccl);
  EXPECT_EQ(detail::nccl_communicator_on_this_thread(), 0u) << "outside the call again";
  nvtx.push(other, all_reduce.attributes);
  EXPECT_EQ(detail::nccl_communicator_on_this_thread(), 0u) << "another library's range names no NCCL communicator";
  nvtx.pop(other);
  session.stop();

  const std::vector<Record> pushes = pushes_of(session);
  ASSERT_EQ(pushes.size(), 2u);
  EXPECT_STREQ(reinterpret_cast<const char*>(static_cast<std::intptr_t>(pushes[0].stream)), "NCCL");
  EXPECT_EQ(pushes[0].u.nvtx.payload_kind, NvtxPayloadKind::kUint64);
  EXPECT_EQ(pushes[0].u.nvtx.payload, kCommHash);
  EXPECT_EQ(std::string(pushes[0].u.nvtx.text, pushes[0].text_size), "ncclAllReduce");
  EXPECT_EQ(pushes[1].u.nvtx.payload_kind, NvtxPayloadKind::kNone) << "extended payloads of other domains are not read";
}

TEST_F(NcclNvtxHandlerTest, AnNcclRangeWithoutACommunicatorCarriesNoPayload) {
  const nvtxDomainHandle_t nccl = nvtx.create_domain("NCCL");
  const OldAllReducePayload old{4096, 0};
  NcclAttributes before_2_25(kAllReduceSchema, &old, sizeof old);
  nvtx.push(nccl, before_2_25.attributes);
  EXPECT_EQ(detail::nccl_communicator_on_this_thread(), 0u);
  nvtx.pop(nccl);
  session.stop();
  const std::vector<Record> pushes = pushes_of(session);
  ASSERT_EQ(pushes.size(), 1u);
  EXPECT_EQ(pushes[0].u.nvtx.payload_kind, NvtxPayloadKind::kNone);
}

// Grouped calls (coalesced collectives, batched sends and receives): the calls only enqueue,
// and the outermost ncclGroupEnd launches inside its own range, which NCCL gives no payload.
// A group on one communicator lends it that communicator; a group over two, a group with a
// call whose communicator cannot be read, or a call outside any group, does not.
struct GroupCall {
  const char* name;            // ncclGroupStart, ncclGroupEnd, or a call
  std::uint64_t communicator;  // a call's (0: none readable, as before NCCL 2.25)
};

// Pushes and pops each call's range; the communicator each range open named, in order.
std::vector<std::uint64_t> open_communicators(const FakeNvtxInstance& nvtx, nvtxDomainHandle_t nccl,
                                              const std::vector<GroupCall>& calls) {
  std::vector<std::uint64_t> seen;
  for (const GroupCall& call : calls) {
    const AllReducePayload payload{call.communicator, 4096, 0};
    NcclAttributes all_reduce(kAllReduceSchema, &payload, sizeof payload);
    if (call.communicator != 0) nvtx.push(nccl, all_reduce.attributes);
    else nvtx.push_registered(nccl, call.name);
    seen.push_back(detail::nccl_communicator_on_this_thread());
    nvtx.pop(nccl);
  }
  return seen;
}

TEST_F(NcclNvtxHandlerTest, AGroupOnOneCommunicatorLendsItToTheRangeOfItsEnd) {
  const nvtxDomainHandle_t nccl = nvtx.create_domain("NCCL");
  constexpr std::uint64_t kOther = 0x0123456789abcdefULL;
  const std::vector<GroupCall> one = {{"ncclGroupStart", 0}, {"ncclAllReduce", kCommHash}, {"ncclAllReduce", kCommHash},
                                      {"ncclGroupEnd", 0}};
  EXPECT_EQ(open_communicators(nvtx, nccl, one), (std::vector<std::uint64_t>{0, kCommHash, kCommHash, kCommHash}));
  const std::vector<GroupCall> nested = {{"ncclGroupStart", 0}, {"ncclGroupStart", 0}, {"ncclAllReduce", kOther},
                                         {"ncclGroupEnd", 0},   {"ncclGroupEnd", 0}};
  EXPECT_EQ(open_communicators(nvtx, nccl, nested), (std::vector<std::uint64_t>{0, 0, kOther, 0, kOther}))
      << "only the outermost end launches";
  const std::vector<GroupCall> two = {{"ncclGroupStart", 0}, {"ncclAllReduce", kCommHash}, {"ncclAllReduce", kOther},
                                      {"ncclGroupEnd", 0}};
  EXPECT_EQ(open_communicators(nvtx, nccl, two), (std::vector<std::uint64_t>{0, kCommHash, kOther, 0}));
  const std::vector<GroupCall> unreadable = {{"ncclGroupStart", 0}, {"ncclAllReduce", kCommHash}, {"ncclSend", 0},
                                             {"ncclGroupEnd", 0}};
  EXPECT_EQ(open_communicators(nvtx, nccl, unreadable), (std::vector<std::uint64_t>{0, kCommHash, 0, 0}))
      << "a call of the group whose communicator cannot be read may be on another one";
  const std::vector<GroupCall> stray = {{"ncclGroupEnd", 0}, {"ncclAllReduce", kCommHash}, {"ncclGroupEnd", 0}};
  EXPECT_EQ(open_communicators(nvtx, nccl, stray), (std::vector<std::uint64_t>{0, kCommHash, 0}))
      << "an end without a start, and a call outside any group, lend nothing";
  session.stop();

  std::vector<std::uint64_t> group_end_payloads;
  for (const Record& r : pushes_of(session)) {
    if (std::string(r.u.nvtx.text, r.text_size) == "ncclGroupEnd")
      group_end_payloads.push_back(r.u.nvtx.payload_kind == NvtxPayloadKind::kUint64 ? r.u.nvtx.payload : 0);
  }
  EXPECT_EQ(group_end_payloads, (std::vector<std::uint64_t>{kCommHash, 0, kOther, 0, 0, 0, 0}))
      << "the trace's ncclGroupEnd ranges carry the communicator their group was on";
}

// (Here, not in nccl_nvtx_support.h: NVTX declares the module types with internal visibility.)
// The payload extension's module as a program's NVTX instance hands it to
// InitializeInjectionNvtxExtension (its function slots, all fresh), and calls through them.
struct FakePayloadExtension {
  explicit FakePayloadExtension(std::uint16_t module_id = NVTX_EXT_PAYLOAD_MODULEID,
                                std::uint16_t compat_id = NVTX_EXT_PAYLOAD_COMPATID)
      : segment{0, kSlots, slots},
        module{NVTX_VERSION, sizeof(nvtxExtModuleInfo_t), module_id, compat_id, 1, &segment, nullptr, nullptr} {}
  FakePayloadExtension(const FakePayloadExtension&) = delete;  // `module` points at `segment`, which points at `slots`
  int push(nvtxDomainHandle_t domain) const {
    return reinterpret_cast<int (*)(nvtxDomainHandle_t, const nvtxPayloadData_t*, std::size_t)>(
        slots[NVTX3EXT_CBID_nvtxRangePushPayload])(domain, nullptr, 0);
  }
  int pop(nvtxDomainHandle_t domain) const {
    return reinterpret_cast<int (*)(nvtxDomainHandle_t, const nvtxPayloadData_t*, std::size_t)>(
        slots[NVTX3EXT_CBID_nvtxRangePopPayload])(domain, nullptr, 0);
  }

  static constexpr std::size_t kSlots = 63;  // nvtxExtImplPayload_v1.h's NVTX_EXT_PAYLOAD_SLOT_COUNT
  std::intptr_t slots[kSlots] = {};
  nvtxExtModuleSegment_t segment;
  nvtxExtModuleInfo_t module;
};

// NCCL pushes its init calls' ranges with nvtxDomainRangePushEx and pops them with
// nvtxRangePopPayload, a call of the payload extension. When NCCL made its communicators
// inside a training step (PyTorch's first collective of a group), a pop not taken left NCCL's
// range open, the step's own pop closed it instead, and every later step nested in that one.
TEST_F(NcclNvtxHandlerTest, APopThroughThePayloadExtensionClosesNcclsRangeNotTheProgramsStep) {
  FakePayloadExtension payload;
  ASSERT_EQ(install_nvtx_extension_handlers(&payload.module), 1);
  const nvtxDomainHandle_t nccl = nvtx.create_domain("NCCL");
  for (const char* step : {"step -1", "step 0"}) {
    nvtx.push_message(nullptr, step);
    if (std::string(step) == "step -1") {
      nvtx.push_registered(nccl, "ncclCommInitRankConfig");
      payload.pop(nccl);
      payload.push(nccl);  // a range pushed with a payload, popped as usual
      nvtx.pop(nccl);
    }
    nvtx.pop(nullptr);
  }
  session.stop();

  std::vector<std::string> open;  // the ranges open on the thread, as the trace pairs them
  std::vector<std::string> closed;
  for (const Record& r : records_of(session)) {
    if (r.kind == RecordKind::kNvtxPush) open.emplace_back(r.u.nvtx.text, r.text_size);
    if (r.kind == RecordKind::kNvtxPop) {
      ASSERT_FALSE(open.empty());
      closed.push_back(open.back());
      open.pop_back();
    }
  }
  EXPECT_EQ(closed, (std::vector<std::string>{"ncclCommInitRankConfig", "NCCL", "step -1", "step 0"}))
      << "a range pushed with a payload is named after its domain";
  EXPECT_TRUE(open.empty());
}

TEST(NvtxPayloadExtensionTest, OnlyItsRangeSlotsAreTaken) {
  FakePayloadExtension payload;
  ASSERT_EQ(install_nvtx_extension_handlers(&payload.module), 1);
  for (std::size_t id = 0; id < FakePayloadExtension::kSlots; ++id) {
    const bool range_call = id == NVTX3EXT_CBID_nvtxRangePushPayload || id == NVTX3EXT_CBID_nvtxRangePopPayload ||
                            id == NVTX3EXT_CBID_nvtxRangeStartPayload || id == NVTX3EXT_CBID_nvtxRangeEndPayload;
    EXPECT_EQ(payload.slots[id] != 0, range_call) << "slot " << id << " (schemas, marks and the rest stay no-ops)";
  }
  FakePayloadExtension other_module(NVTX_EXT_PAYLOAD_MODULEID + 1);
  FakePayloadExtension older(NVTX_EXT_PAYLOAD_MODULEID, 0x0102);
  EXPECT_EQ(install_nvtx_extension_handlers(&other_module.module), 1) << "NVTX goes on with its own no-ops";
  EXPECT_EQ(install_nvtx_extension_handlers(&older.module), 1);
  for (std::size_t id = 0; id < FakePayloadExtension::kSlots; ++id) {
    EXPECT_EQ(other_module.slots[id], 0) << "another extension module's slot " << id;
    EXPECT_EQ(older.slots[id], 0) << "a payload extension whose slots may be numbered otherwise: slot " << id;
  }
  EXPECT_EQ(install_nvtx_extension_handlers(nullptr), 1);
}

}  // namespace
