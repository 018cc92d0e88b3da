#pragma once
// One open trace: the timeline, a search bar (substring or regex, next/previous, Enter and
// Shift+Enter), follow mode for a trace (or a rank timeline's files) still being written -
// a rank timeline merged again clears the selection and the search outlines, whose ids
// were the old merge's - and below the timeline the
// selected event's details (flows: double-click to jump) and the selected range's summary
// (computed off the UI thread; follow polling pauses meanwhile, as the model must not grow
// under it).

#include <cudascope/gui/range_summary_model.h>
#include <cudascope/gui/trace_document.h>

#include <QFutureWatcher>
#include <QWidget>

#include <cstdint>

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
  ~TracePage() override;  // waits for a summary still being computed over the document
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
  // Events whose names the last search matched (0 before any).
  std::uint64_t matchCount() const { return found_.count; }

 signals:
  // The range summary of the latest selection is in summary().
  void summaryReady();

 private:
  void runSearch();
  bool step(bool forward);
  void updateStatus();
  void summarize(qint64 t0, qint64 t1);

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
  QFutureWatcher<analysis::RangeSummary> summarizing_;
  bool resume_follow_ = false;
  qint64 pending_t0_ = 0, pending_t1_ = 0;
  bool pending_ = false;
  analysis::SearchMatches found_;
  QString found_for_;
  bool found_regex_ = false;
};

}  // namespace cudascope::gui
