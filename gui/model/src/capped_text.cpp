#include <cudascope/gui/capped_text.h>

#include <cudascope/analysis/cpp_names.h>

#include <QLocale>

namespace cudascope::gui {

QString capped(QString text, qsizetype max) {
  if (text.size() <= max) return text;
  if (max > 0 && text[max - 1].isHighSurrogate()) --max;
  text.truncate(max);
  text += QChar(0x2026);  // …
  return text;
}

QString capped(std::string_view utf8, qsizetype max) {
  // A character takes at most 4 bytes of UTF-8, so the first 4 * max bytes hold the first
  // `max` UTF-16 units; a character cut in two there lies past them and is dropped.
  const std::size_t take = utf8.size() / 4 > std::size_t(max) ? 4 * std::size_t(max) : utf8.size();
  return capped(QString::fromUtf8(utf8.data(), qsizetype(take)), max);
}

QString lengthNote(std::string_view utf8, qsizetype max) {
  if (utf8.size() <= std::size_t(max)) return {};  // never more UTF-16 units than bytes
  qsizetype units = 0, characters = 0;
  for (const char c : utf8) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte
    ++characters;
    units += byte >= 0xF0 ? 2 : 1;  // outside the BMP: a surrogate pair
  }
  if (units <= max) return {};
  return QStringLiteral("\n(%1 characters in all)").arg(QLocale().toString(characters));
}

QString cappedTooltip(std::string_view utf8) {
  return capped(utf8, kMaxTooltipNameChars) + lengthNote(utf8, kMaxTooltipNameChars);
}

QString cappedShortName(std::string_view utf8, qsizetype max) {
  if (!analysis::looks_like_cpp_signature(utf8)) return capped(utf8, max);  // what shortening would return
  return capped(std::string_view(analysis::shorten_cpp_name(utf8)), max);
}

}  // namespace cudascope::gui
