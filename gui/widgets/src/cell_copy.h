#pragma once
// Ctrl+C in a table or a list copies the current cell's whole text: its FullTextRole where the model
// cuts what cells show (capped_text.h), else its DisplayRole, as Qt's own copy does. Without
// it, copying a long kernel or frame name would take only the prefix its cell shows.

class QAbstractItemView;

namespace cudascope::gui {

void copyWholeCells(QAbstractItemView* view);

}  // namespace cudascope::gui
