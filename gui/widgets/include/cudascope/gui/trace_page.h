#pragma once
// One open trace: the timeline, a search bar (substring or regex, next/previous, Enter and
// Shift+Enter), follow mode for a trace still being written, and below the timeline the
// selected event's details (flows: double-click to jump) and the selected range's summary.

#include <cudascope/gui/trace_document.h>

#include <QWidget>

class QCheckBox;
class QLabel;
class QLineEdit;
class QTableView;
class QTabWidget;

namespace cudascope::gui {

class EventDetailsModel;
class RangeSummaryModel;
class TraceTimelineView;

class TracePage : public QWidget {
  Q_OBJECT
 public:
  // Takes ownership of `document`.
  explicit TracePage(TraceDocument* document, QWidget* parent = nullptr);
  TraceDocument* document() const { return doc_; }
  TraceTimelineView* view() const { return view_; }
  EventDetailsModel* details() const { return details_; }
  RangeSummaryModel* summary() const { return summary_; }
  QLineEdit* searchBox() const { return search_; }
  QCheckBox* regexBox() const { return regex_; }
  QCheckBox* followBox() const { return follow_; }
  QTabWidget* panels() const { return panels_; }
  QString statusText() const;
  // Runs the search box's query; then next/previous select and reveal a match. False when none.
  bool findNext();
  bool findPrevious();

 private:
  void runSearch();
  bool step(bool forward);
  void updateStatus();

  TraceDocument* doc_;
  TraceTimelineView* view_;
  EventDetailsModel* details_;
  RangeSummaryModel* summary_;
  QLineEdit* search_;
  QCheckBox* regex_;
  QCheckBox* follow_;
  QLabel* matches_;
  QLabel* status_;
  QTabWidget* panels_;
  QTableView* details_view_;
  analysis::SearchMatches found_;
  QString found_for_;
  bool found_regex_ = false;
};

}  // namespace cudascope::gui
