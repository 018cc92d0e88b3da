#pragma once
// The pinned stack of the selected allocation: a heading naming the allocation and its user
// frame, then the frames (StackModel: names shortened, user frames bold, C++ library runs
// folded - double-click opens one), with "full names", "allocator frames" and Copy (the
// whole stack, full names, to the clipboard; Ctrl+C in the list does the same). The user
// frame is selected and scrolled into view whenever the stack changes.

#include <cudascope/gui/loaded_snapshot.h>

#include <QWidget>

class QCheckBox;
class QLabel;
class QListView;
class QPushButton;

namespace cudascope::gui {

class StackModel;

class StackPanel : public QWidget {
  Q_OBJECT
 public:
  explicit StackPanel(QWidget* parent = nullptr);
  // `what` heads the panel ("32.00 MiB at 0x7f..., allocated by entry 812").
  void setStack(std::shared_ptr<const LoadedSnapshot> loaded, analysis::StackId stack, const QString& what);
  void clear();
  StackModel* model() const { return model_; }
  QListView* list() const { return list_; }
  QLabel* heading() const { return heading_; }
  QCheckBox* fullNames() const { return full_names_; }
  QCheckBox* showHidden() const { return show_hidden_; }
  // Puts the whole stack on the clipboard; returns what it put there.
  QString copy();
  // Selects the user frame's row and scrolls it into view (no-op without one).
  void revealUserFrame();

 private:
  void updateHeading();
  StackModel* model_;
  QListView* list_;
  QLabel* heading_;
  QCheckBox* full_names_;
  QCheckBox* show_hidden_;
  QPushButton* copy_;
  QString what_;
};

}  // namespace cudascope::gui
