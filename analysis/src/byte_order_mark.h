#pragma once
// A UTF-8 byte-order mark (EF BB BF), which editors and tools on Windows write before UTF-8
// text. JSON lets a parser ignore one at the start (RFC 8259, section 8.1). Every JSON input
// is read past it where its bytes first reach a reader: detect_file_kind()'s look at the
// head, load_snapshot()'s choice of reader and the trace parser's root (which the loaders and
// the follower share). It is not a format problem, and offsets go on counting the file's bytes.

#include <cudascope/util/byte_source.h>

#include <cstddef>
#include <string_view>

namespace cudascope::analysis::detail {

inline constexpr std::string_view kUtf8ByteOrderMark = "\xEF\xBB\xBF";

// The length of the mark `head` starts with: 3, or 0 when it starts with none.
inline std::size_t byte_order_mark_length(std::string_view head) {
  return head.starts_with(kUtf8ByteOrderMark) ? kUtf8ByteOrderMark.size() : 0;
}

// Consumes a mark at the reader's position, if one is there.
inline void skip_byte_order_mark(util::ByteReader& reader) {
  if (reader.ensure(kUtf8ByteOrderMark.size()))
    reader.consume(byte_order_mark_length(std::string_view(reader.data(), reader.available())));
}

}  // namespace cudascope::analysis::detail
