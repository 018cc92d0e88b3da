#pragma once
// The frames of one stack, innermost first, as the stack panel shows them: C++ names
// shortened (return type, template arguments and parameters dropped; setFullNames(true)
// shows them whole), runs of two or more C++ library frames (the dispatcher, ATen, c10)
// folded into one row that setExpanded() opens, and the allocator's and unwinder's own
// frames hidden unless setShowHidden(true).
//
// Roles: DisplayRole the row's text; ToolTipRole the full text (a fold: every frame in it);
// names and file names cut to kMaxLabelChars, in a frame's tooltip to kMaxTooltipNameChars
// with the whole length (capped_text.h); FullTextRole the row's text uncut (what copying
// the row takes); copyText() cuts nothing.
// Qt::UserRole true for user frames (bold in views; the one Frame columns show is
// userRow()); FoldRole the number of frames a folded row holds (0 for a frame).

#include <cudascope/gui/loaded_snapshot.h>

#include <QAbstractListModel>

#include <memory>
#include <set>
#include <vector>

namespace cudascope::gui {

class StackModel : public QAbstractListModel {
  Q_OBJECT
 public:
  static constexpr int FoldRole = Qt::UserRole + 2;
  using QAbstractListModel::QAbstractListModel;
  void setStack(std::shared_ptr<const LoadedSnapshot> loaded, analysis::StackId stack);
  void setShowHidden(bool show);
  void setFullNames(bool full);
  // Opens (or closes) the folded row `row`; a frame row is left as it is.
  void setExpanded(int row, bool expanded);
  void clear();
  bool hasStack() const { return loaded_ != nullptr; }
  analysis::StackId stack() const { return stack_; }
  // Frames of the stack hidden from the rows (0 while hidden frames are shown).
  int hiddenCount() const { return hidden_; }
  // The row of the user frame (the one Frame columns show); -1 when there is none.
  int userRow() const;
  // Every frame, hidden ones included, full names: for the clipboard.
  QString copyText() const;
  int rowCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;

 private:
  struct Row {
    size_t first = 0, count = 1;  // frames_[first, first + count); count > 1: a folded run
  };
  void rebuild();
  QString rowText(size_t row, qsizetype max_chars) const;  // names and file names cut to max_chars
  QString label(size_t row) const;                          // DisplayRole: rowText(row, kMaxLabelChars), cached
  std::shared_ptr<const LoadedSnapshot> loaded_;
  analysis::StackId stack_ = 0;
  bool show_hidden_ = false;
  bool full_names_ = false;
  int hidden_ = 0;
  std::vector<analysis::FrameId> frames_;  // the frames shown (visible, or all)
  std::set<size_t> expanded_;              // runs opened, by their first frame
  std::vector<Row> rows_;
  mutable std::vector<QString> labels_;  // per row: its DisplayRole, made when first shown
};

}  // namespace cudascope::gui
