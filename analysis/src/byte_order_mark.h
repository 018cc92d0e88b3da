#pragma once
// A UTF-8 byte-order mark (EF BB BF), which editors and tools on Windows write before UTF-8
// text. JSON lets a parser ignore one at the start (RFC 8259, section 8.1). Every JSON input
// is read past it where its bytes first reach a reader: detect_file_kind()'s look at the
// head, load_snapshot()'s choice of reader and the trace parser's root (which the loaders and
// the follower share). It is not a format problem, and offsets go on counting the file's bytes.
// It belongs before text only: followed by anything but JSON's whitespace, '{' or '[' (a
// pickle's 0x80, say) it is not read as a mark, and the file is refused by its first byte.

#include <cudascope/util/byte_source.h>

#include <cstddef>
#include <string_view>

namespace cudascope::analysis::detail {

inline constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

// The length of the mark `head` starts with when JSON text follows it (whitespace, '{' or
// '[', or nothing): 3, else 0. `head` holds the input's first bytes, at least 4 of them where
// the input has them.
inline std::size_t byte_order_mark_length(std::string_view head) {
  if (!head.starts_with(kUtf8ByteOrderMark)) return 0;
  if (head.size() == kUtf8ByteOrderMark.size()) return kUtf8ByteOrderMark.size();
  const char next = head[kUtf8ByteOrderMark.size()];
  const bool json = next == '{' || next == '[' || next == ' ' || next == '\n' || next == '\r' || next == '\t';
  return json ? kUtf8ByteOrderMark.size() : 0;
}

// Consumes a mark at the reader's position, if JSON text follows it.
inline void skip_byte_order_mark(util::ByteReader& reader) {
  reader.ensure(kUtf8ByteOrderMark.size() + 1);  // false where the input is shorter: what it has
  reader.consume(byte_order_mark_length(std::string_view(reader.data(), reader.available())));
}

}  // namespace cudascope::analysis::detail
