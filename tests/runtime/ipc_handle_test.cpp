// A SharedTensorHandle comes from outside the process (a pipe, a file, a command line):
// its text form and its values are checked before any device work, whatever is in them.
#include "test_support.h"

#include "ipc/handle_checks.h"

#include <cudascope/cuda/ipc.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>

namespace cuda = cudascope::cuda;
using cudascope::DType;
using cuda::SharedTensorHandle;

namespace {

// A handle a producer could have made: a 4 x 8 float32 view (128 bytes) at the start of a
// 1 KiB storage, 512 bytes into a 4 KiB segment.
SharedTensorHandle plausible() {
  SharedTensorHandle h;
  h.device = 0;
  h.mem_handle.fill(0x5a);
  h.segment_size_bytes = 4096;
  h.storage_offset_bytes = 512;
  h.storage_size_bytes = 1024;
  h.ref_counter_handle = "/cudascope_ipc_1234_5678";
  h.ref_counter_offset = 3;
  h.event_sync_required = true;
  h.dtype = DType::kFloat32;
  h.sizes = {4, 8};
  h.strides = {8, 1};
  h.storage_offset = 0;
  return h;
}

std::string refusal(const SharedTensorHandle& h) {
  try {
    cuda::detail::ipc::check_handle(h);
  } catch (const cuda::Error& e) {
    EXPECT_EQ(e.code(), cuda::error_code::kInvalidValue);
    return e.what();
  }
  return "";
}

// Recomputed independently (128-bit arithmetic): does the handle describe a view of its
// storage, and the storage a part of its segment?
bool describes_a_view(const SharedTensorHandle& h) {
  if (h.device < 0 || h.sizes.size() != h.strides.size() || h.storage_offset < 0 || h.segment_size_bytes == 0) return false;
  const DType dtypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64,
                          DType::kInt32,   DType::kUInt8,   DType::kBool};
  if (std::find(std::begin(dtypes), std::end(dtypes), h.dtype) == std::end(dtypes)) return false;
  __int128 numel = 1, last = h.storage_offset;
  for (std::size_t d = 0; d < h.sizes.size(); ++d) {
    if (h.sizes[d] < 0 || h.strides[d] < 0) return false;
    numel *= h.sizes[d];
    if (numel > std::numeric_limits<std::int64_t>::max()) return false;
    last += static_cast<__int128>(h.sizes[d] - 1) * h.strides[d];
  }
  const __int128 end = numel == 0 ? 0 : (last + 1) * static_cast<__int128>(cudascope::element_size(h.dtype));
  const __int128 storage_end = static_cast<__int128>(h.storage_offset_bytes) + h.storage_size_bytes;
  const auto& name = h.ref_counter_handle;
  return end <= h.storage_size_bytes && storage_end <= h.segment_size_bytes && name.size() >= 2 && name[0] == '/' &&
         name.find('/', 1) == std::string::npos && h.ref_counter_offset < 10000;
}

}  // namespace

TEST(IpcHandleChecksTest, APlausibleHandlePasses) {
  EXPECT_EQ(refusal(plausible()), "");
  EXPECT_TRUE(describes_a_view(plausible()));
}

TEST(IpcHandleChecksTest, EachImpossibleValueIsRefusedNamingIt) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  struct Case {
    const char* what;
    void (*corrupt)(SharedTensorHandle&);
    const char* named;
  };
  const Case cases[] = {
      {"negative size", [](SharedTensorHandle& h) { h.sizes[1] = -2; }, "sizes[1] is -2"},
      {"negative stride", [](SharedTensorHandle& h) { h.strides[0] = -8; }, "strides[0] is -8"},
      {"negative offset", [](SharedTensorHandle& h) { h.storage_offset = -1; }, "storage_offset is -1"},
      {"rank mismatch", [](SharedTensorHandle& h) { h.strides = {1}; }, "sizes has 2 dimensions, strides 1"},
      {"numel overflow", [](SharedTensorHandle& h) { h.sizes = {std::int64_t{1} << 40, std::int64_t{1} << 40}; },
       "element count of sizes overflows"},
      {"extent overflow", [](SharedTensorHandle& h) { h.sizes = {3, 1}; h.strides = {kMax / 2 + 1, 1}; },
       "sizes[0] 3 x strides[0]"},
      {"byte size overflow", [](SharedTensorHandle& h) { h.sizes = {std::int64_t{1} << 62, 1}; h.strides = {1, 1}; },
       "extent in bytes overflows"},
      {"view past the storage", [](SharedTensorHandle& h) { h.sizes = {4, 65}; h.strides = {65, 1}; },
       "reaches 1040 bytes into its storage of storage_size_bytes 1024"},
      {"offset past the storage", [](SharedTensorHandle& h) { h.storage_offset = 225; }, "reaches 1028 bytes"},
      {"storage past the segment", [](SharedTensorHandle& h) { h.storage_offset_bytes = 3073; },
       "storage_offset_bytes 3073 + storage_size_bytes 1024) reaches past the segment of segment_size_bytes 4096"},
      {"storage offset wraps", [](SharedTensorHandle& h) { h.storage_offset_bytes = ~std::uint64_t{0}; },
       "reaches past the segment"},
      {"empty segment", [](SharedTensorHandle& h) { h.segment_size_bytes = 0; }, "segment_size_bytes is 0"},
      {"unknown dtype", [](SharedTensorHandle& h) { h.dtype = static_cast<DType>(42); }, "dtype 42 is not a known dtype"},
      {"negative device", [](SharedTensorHandle& h) { h.device = -1; }, "device is -1"},
      {"counter path", [](SharedTensorHandle& h) { h.ref_counter_handle = "/dev/shm/x"; }, "ref_counter '/dev/shm/x'"},
      {"counter name", [](SharedTensorHandle& h) { h.ref_counter_handle = ""; }, "ref_counter ''"},
      {"counter slot", [](SharedTensorHandle& h) { h.ref_counter_offset = 10000; }, "ref_counter_offset 10000"},
  };
  for (const Case& c : cases) {
    SharedTensorHandle h = plausible();
    c.corrupt(h);
    EXPECT_FALSE(describes_a_view(h)) << c.what;
    EXPECT_THAT(refusal(h), ::testing::HasSubstr(c.named)) << c.what;
  }
}

TEST(IpcHandleChecksTest, AnEmptyViewNeedsNoMemoryButAValidShape) {
  SharedTensorHandle h = plausible();
  h.sizes = {0, 8};
  h.storage_offset = 1 << 20;  // past the storage, but nothing is read
  EXPECT_EQ(refusal(h), "");
  h.sizes = {0, -8};
  EXPECT_THAT(refusal(h), ::testing::HasSubstr("sizes[1] is -8"));
}

TEST(IpcHandleTextTest, TheTextFormIsStrict) {
  const std::string good = plausible().serialize();
  const auto parse_error = [](const std::string& text) -> std::string {
    try {
      SharedTensorHandle::parse(text);
    } catch (const cuda::Error& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_EQ(parse_error(good), "");
  EXPECT_THAT(parse_error(""), ::testing::HasSubstr("the text is empty"));
  EXPECT_THAT(parse_error("cudascope-ipc-1 device=0"), ::testing::HasSubstr("does not start with 'cudascope-ipc-2'"));
  EXPECT_THAT(parse_error(good + " device=1"), ::testing::HasSubstr("field 'device' is given twice"));
  EXPECT_THAT(parse_error(good + " colour=red"), ::testing::HasSubstr("unknown field 'colour'"));
  EXPECT_THAT(parse_error(good + " stray"), ::testing::HasSubstr("'stray' is not a field=value pair"));
  std::string sync = good;
  sync.replace(sync.find("event_sync_required=1"), 21, "event_sync_required=7");
  EXPECT_THAT(parse_error(sync), ::testing::HasSubstr("'event_sync_required' has an unreadable value '7'"));
  std::string huge = good;
  huge.replace(huge.find("sizes=4,8"), 9, "sizes=4,99999999999999999999");
  EXPECT_THAT(parse_error(huge), ::testing::HasSubstr("'sizes' has an unreadable value '99999999999999999999'"));
  std::string negative = good;
  negative.replace(negative.find("storage_size_bytes=1024"), 23, "storage_size_bytes=-1024");
  EXPECT_THAT(parse_error(negative), ::testing::HasSubstr("'storage_size_bytes' has an unreadable value '-1024'"));
}

// Random corruptions of a good text: each is refused by parse (cuda::Error), refused by the
// checks (cuda::Error), or describes a view that fits its storage and segment. Nothing else
// (no other exception, no crash under ASan, no accepted handle that reaches out of bounds).
TEST(IpcHandleTextTest, CorruptedTextsAreRefusedOrDescribeAView) {
  const std::string good = plausible().serialize();
  std::mt19937 random(12);
  const std::string alphabet = "0123456789-,= x9f";
  const auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(random); };
  int bad_text = 0, bad_values = 0, accepted = 0;
  for (int round = 0; round < 4000; ++round) {
    std::string text = good;
    for (std::size_t edits = 1 + pick(3); edits > 0 && !text.empty(); --edits) {
      const std::size_t at = pick(text.size());
      switch (pick(5)) {
        case 0: text[at] = alphabet[pick(alphabet.size())]; break;
        case 1: text.erase(at, 1); break;
        case 2: text.insert(at, 1, alphabet[pick(alphabet.size())]); break;
        case 3: text.resize(at); break;
        default: text[at] = static_cast<char>(pick(256)); break;
      }
    }
    SharedTensorHandle h;
    try {
      h = SharedTensorHandle::parse(text);
    } catch (const cuda::Error&) {
      ++bad_text;
      continue;
    }
    const std::string why = refusal(h);
    if (!why.empty()) {
      ++bad_values;
      EXPECT_THAT(why, ::testing::HasSubstr("bad handle: "));
      EXPECT_FALSE(describes_a_view(h)) << "refused a good handle: " << text << "\n" << why;
      continue;
    }
    ++accepted;
    EXPECT_TRUE(describes_a_view(h)) << "accepted a handle that reaches out of bounds: " << text;
  }
  // Random bytes are never a handle.
  for (int round = 0; round < 500; ++round) {
    std::string text(pick(400), '\0');
    for (char& c : text) c = static_cast<char>(pick(256));
    EXPECT_THROW(SharedTensorHandle::parse(text), cuda::Error);
  }
  // Every outcome was reached: the corruptions exercise both the parser and the checks.
  EXPECT_GT(bad_text, 0);
  EXPECT_GT(bad_values, 0);
  EXPECT_GT(accepted, 0);
  std::printf("corrupted texts: %d unreadable, %d refused by the checks, %d accepted\n", bad_text, bad_values, accepted);
}
