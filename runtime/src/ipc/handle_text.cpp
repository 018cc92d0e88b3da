// SharedTensorHandle's one-line text form: "cudascope-ipc-1" then key=value fields separated
// by spaces; byte arrays in hex, lists comma-separated.
#include "../check.h"

#include <cudascope/cuda/ipc.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>

namespace cudascope::cuda {
namespace {

// Bumped with every change of the fields, so that a text from another build is refused at once.
constexpr std::string_view kMagic = "cudascope-ipc-2";

constexpr std::string_view kFields[] = {"device", "mem", "segment_size_bytes", "storage_offset_bytes",
                                        "storage_size_bytes", "ref_counter", "ref_counter_offset", "event",
                                        "event_sync_required", "dtype", "sizes", "strides", "storage_offset"};

template <std::size_t N>
std::string hex(const std::array<std::uint8_t, N>& bytes) {
  std::string out;
  out.reserve(2 * N);
  for (std::uint8_t byte : bytes) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", byte);
    out += two;
  }
  return out;
}

std::string joined(const std::vector<std::int64_t>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out;
}

[[noreturn]] void bad(const std::string& field, std::string_view value) {
  detail::throw_error(error_code::kInvalidValue, "SharedTensorHandle::parse", __FILE__, __LINE__,
              "field '" + field + "' has an unreadable value '" + std::string(value) + "'");
}

template <typename T>
T number(const std::string& field, std::string_view text) {
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) bad(field, text);
  return value;
}

template <std::size_t N>
std::array<std::uint8_t, N> bytes(const std::string& field, std::string_view text) {
  if (text.size() != 2 * N) bad(field, text);
  std::array<std::uint8_t, N> out{};
  for (std::size_t i = 0; i < N; ++i) {
    unsigned value = 0;
    const auto [end, error] = std::from_chars(text.data() + 2 * i, text.data() + 2 * i + 2, value, 16);
    if (error != std::errc() || end != text.data() + 2 * i + 2) bad(field, text);
    out[i] = static_cast<std::uint8_t>(value);
  }
  return out;
}

std::vector<std::int64_t> list(const std::string& field, std::string_view text) {
  std::vector<std::int64_t> out;
  while (!text.empty()) {
    const std::size_t comma = text.find(',');
    out.push_back(number<std::int64_t>(field, text.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

DType dtype_named(std::string_view name) {
  for (DType d : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kInt64, DType::kInt32, DType::kUInt8,
                  DType::kBool}) {
    if (name == dtype_name(d)) return d;
  }
  bad("dtype", name);
}

}  // namespace

std::string SharedTensorHandle::serialize() const {
  std::string out(kMagic);
  out += " device=" + std::to_string(device) + " mem=" + hex(mem_handle) +
         " segment_size_bytes=" + std::to_string(segment_size_bytes) + " storage_offset_bytes=" + std::to_string(storage_offset_bytes) +
         " storage_size_bytes=" + std::to_string(storage_size_bytes) + " ref_counter=" + ref_counter_handle +
         " ref_counter_offset=" + std::to_string(ref_counter_offset) + " event=" + hex(event_handle) +
         " event_sync_required=" + (event_sync_required ? "1" : "0") + " dtype=" + dtype_name(dtype) +
         " sizes=" + joined(sizes) + " strides=" + joined(strides) + " storage_offset=" + std::to_string(storage_offset);
  return out;
}

SharedTensorHandle SharedTensorHandle::parse(std::string_view text) {
  std::map<std::string, std::string_view> fields;
  bool magic_seen = false;
  while (!text.empty()) {
    const std::size_t space = text.find(' ');
    const std::string_view token = text.substr(0, space);
    text.remove_prefix(space == std::string_view::npos ? text.size() : space + 1);
    if (token.empty()) continue;
    if (!magic_seen) {
      CUDASCOPE_CHECK(token == kMagic, error_code::kInvalidValue, "SharedTensorHandle::parse",
                      "the text does not start with '" + std::string(kMagic) + "'");
      magic_seen = true;
      continue;
    }
    const std::size_t equals = token.find('=');
    CUDASCOPE_CHECK(equals != std::string_view::npos, error_code::kInvalidValue, "SharedTensorHandle::parse",
                    "'" + std::string(token) + "' is not a field=value pair");
    const std::string name(token.substr(0, equals));
    CUDASCOPE_CHECK(std::find(std::begin(kFields), std::end(kFields), name) != std::end(kFields),
                    error_code::kInvalidValue, "SharedTensorHandle::parse", "unknown field '" + name + "'");
    CUDASCOPE_CHECK(fields.emplace(name, token.substr(equals + 1)).second, error_code::kInvalidValue,
                    "SharedTensorHandle::parse", "field '" + name + "' is given twice");
  }
  CUDASCOPE_CHECK(magic_seen, error_code::kInvalidValue, "SharedTensorHandle::parse", "the text is empty");
  const auto field = [&](const std::string& name) {
    const auto found = fields.find(name);
    CUDASCOPE_CHECK(found != fields.end(), error_code::kInvalidValue, "SharedTensorHandle::parse",
                    "field '" + name + "' is missing");
    return found->second;
  };
  SharedTensorHandle h;
  h.device = number<int>("device", field("device"));
  h.mem_handle = bytes<64>("mem", field("mem"));
  h.segment_size_bytes = number<std::uint64_t>("segment_size_bytes", field("segment_size_bytes"));
  h.storage_offset_bytes = number<std::uint64_t>("storage_offset_bytes", field("storage_offset_bytes"));
  h.storage_size_bytes = number<std::uint64_t>("storage_size_bytes", field("storage_size_bytes"));
  h.ref_counter_handle = std::string(field("ref_counter"));
  h.ref_counter_offset = number<std::uint64_t>("ref_counter_offset", field("ref_counter_offset"));
  h.event_handle = bytes<64>("event", field("event"));
  const std::string_view sync = field("event_sync_required");
  if (sync != "0" && sync != "1") bad("event_sync_required", sync);
  h.event_sync_required = sync == "1";
  h.dtype = dtype_named(field("dtype"));
  h.sizes = list("sizes", field("sizes"));
  h.strides = list("strides", field("strides"));
  h.storage_offset = number<std::int64_t>("storage_offset", field("storage_offset"));
  return h;
}

}  // namespace cudascope::cuda
