#pragma once
// How much of a name from a file the viewer lays out. Names come from traces and snapshots
// (kernels, NVTX ranges, frames, file names), and a broken or hostile file can name one with
// megabytes: a view that converts, shortens or measures a whole name at every repaint then
// takes seconds and gigabytes. A cell or a label shows at most kMaxLabelChars of a name, a
// tooltip at most kMaxTooltipNameChars and how long the whole is; the models keep the whole
// name for sorting, filtering and copying (FullTextRole). Pure functions: any thread.

#include <QString>
#include <Qt>

#include <limits>
#include <string_view>

namespace cudascope::gui {

// More than a screen's width of text, in UTF-16 units (QString::size()).
inline constexpr qsizetype kMaxLabelChars = 512, kMaxTooltipNameChars = 4096;
// No cut: for what must stay whole (the clipboard).
inline constexpr qsizetype kWhole = std::numeric_limits<qsizetype>::max();

// The item-data role of a cell's text uncut, in models whose cells show a capped prefix:
// what copying the cell (Ctrl+C) takes. Models that cut nothing leave it unset.
inline constexpr int FullTextRole = Qt::UserRole + 16;

// `text` cut to its first `max` UTF-16 units with an ellipsis (…) after them when longer
// (a surrogate pair is never split); unchanged otherwise.
QString capped(QString text, qsizetype max);
// The same from UTF-8, converting no more of it than is shown.
QString capped(std::string_view utf8, qsizetype max);
// Empty when capped(utf8, max) shows all of `utf8`; else a line with the whole length for a
// tooltip: "\n(40,000,000 characters in all)", in the user's locale.
QString lengthNote(std::string_view utf8, qsizetype max);
// A name as a tooltip shows it: capped to kMaxTooltipNameChars, and its lengthNote().
QString cappedTooltip(std::string_view utf8);
// A C++ name shortened as Nsight shows it (analysis/cpp_names.h), then capped; any other
// name capped as it is, without a copy of the whole.
QString cappedShortName(std::string_view utf8, qsizetype max);

}  // namespace cudascope::gui
