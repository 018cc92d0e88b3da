#include <cudascope/gui/trace_page.h>

#include "cell_copy.h"

#include <cudascope/gui/event_details_model.h>
#include <cudascope/gui/range_summary_model.h>
#include <cudascope/gui/trace_timeline_view.h>

#include <QCheckBox>
#include <QGuiApplication>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QShortcut>
#include <QSignalBlocker>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace cudascope::gui {

TracePage::TracePage(TraceDocument* document, QWidget* parent) : QWidget(parent), doc_(document) {
  doc_->setParent(this);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* bar = new QHBoxLayout;
  search_ = new QLineEdit;
  search_->setPlaceholderText(tr("search names (Enter: next, Shift+Enter: previous)"));
  search_->setClearButtonEnabled(true);
  regex_ = new QCheckBox(tr("regex"));
  auto* prev = new QPushButton(tr("Previous"));
  auto* next = new QPushButton(tr("Next"));
  matches_ = new QLabel;
  status_ = new QLabel;
  // A long status (a cut-short file's note) is clipped, never widens the window past the
  // screen; the whole text is its tooltip and the window's status bar.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  follow_ = new QCheckBox(tr("follow (file still being written)"));
  follow_->setEnabled(doc_->canFollow());
  follow_->setChecked(doc_->following());
  if (doc_->cutShort()) {
    status_->setStyleSheet("color: #e64646; font-weight: bold");
    follow_->setToolTip(tr("The file ends before the trace does and has not changed lately: it is not followed. Tick to follow it anyway."));
  }
  bar->addWidget(search_, 2);
  bar->addWidget(regex_);
  bar->addWidget(prev);
  bar->addWidget(next);
  bar->addWidget(matches_, 1);
  bar->addWidget(status_, 3);
  bar->addWidget(follow_);
  layout->addLayout(bar);

  auto* split = new QSplitter(Qt::Vertical);
  view_ = new TraceTimelineView;
  view_->setDocument(doc_);
  split->addWidget(view_);
  panels_ = new QTabWidget;
  details_ = new EventDetailsModel(this);
  details_view_ = new QTableView;
  details_view_->setModel(details_);
  details_view_->horizontalHeader()->setStretchLastSection(true);
  details_view_->verticalHeader()->hide();
  details_view_->verticalHeader()->setDefaultSectionSize(20);
  details_view_->setWordWrap(false);
  copyWholeCells(details_view_);
  summary_ = new RangeSummaryModel(this);
  auto* sorted = new QSortFilterProxyModel(this);
  sorted->setSourceModel(summary_);
  sorted->setSortRole(RangeSummaryModel::SortRole);  // names by their rank among the whole names
  auto* summary_view = new QTableView;
  summary_view->setModel(sorted);
  summary_view->setSortingEnabled(true);
  summary_view->sortByColumn(-1, Qt::AscendingOrder);
  summary_view->verticalHeader()->hide();
  summary_view->verticalHeader()->setDefaultSectionSize(20);
  summary_view->setWordWrap(false);  // one line per row; long names elide in the middle, full on hover
  summary_view->setTextElideMode(Qt::ElideMiddle);
  copyWholeCells(summary_view);
  summary_view->horizontalHeader()->setSectionResizeMode(RangeSummaryModel::Name, QHeaderView::Stretch);
  panels_->addTab(details_view_, tr("Details"));
  panels_->addTab(summary_view, tr("Range summary (Shift+drag)"));
  split->addWidget(panels_);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 1);
  split->setSizes({640, 230});
  layout->addWidget(split, 1);

  connect(view_, &TraceTimelineView::eventSelected, this, [this](quint32 event) {
    details_->setEvent(doc_, event);
    details_view_->resizeColumnToContents(0);
    if (event != TraceTimelineView::kNone) panels_->setCurrentIndex(0);
  });
  connect(view_, &TraceTimelineView::rangeSelected, this, &TracePage::summarize);
  connect(&summarizing_, &QFutureWatcher<analysis::RangeSummary>::finished, this, [this] {
    if (pending_) {  // a newer selection arrived meanwhile: summarise that one instead
      pending_ = false;
      summarize(pending_t0_, pending_t1_);
      return;
    }
    if (resume_follow_) doc_->setFollowing(true), resume_follow_ = false;
    // Moved, not copied: the summary holds every name in the range, and a name can be megabytes.
    analysis::RangeSummary result = summarizing_.future().takeResult();
    const qint64 span = result.t1 - result.t0;
    summary_->setSummary(std::move(result));
    panels_->setTabText(1, tr("Range summary: %1").arg(formatDuration(span)));
    emit summaryReady();
  });
  connect(details_view_, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
    const QVariant target = index.siblingAtColumn(0).data(Qt::UserRole);
    if (target.isValid()) view_->selectEvent(target.toUInt(), true);
  });
  connect(search_, &QLineEdit::returnPressed, this, [this] {
    if (QGuiApplication::keyboardModifiers() & Qt::ShiftModifier) findPrevious();
    else findNext();
  });
  connect(search_, &QLineEdit::textChanged, this, [this](const QString& text) {
    matches_->clear();
    if (text.isEmpty()) view_->setHighlightedNames({});
  });
  connect(next, &QPushButton::clicked, this, &TracePage::findNext);
  connect(prev, &QPushButton::clicked, this, &TracePage::findPrevious);
  auto* find = new QShortcut(QKeySequence::Find, this);
  connect(find, &QShortcut::activated, this, [this] {
    search_->setFocus();
    search_->selectAll();
  });
  connect(follow_, &QCheckBox::toggled, doc_, [this](bool on) { doc_->setFollowing(on, 500); });
  connect(doc_, &TraceDocument::rebuilt, this, [this] {
    found_ = {};  // its name ids were the old model's
    matches_->clear();
  });
  connect(doc_, &TraceDocument::grew, this, [this] {
    found_for_.clear();  // the search index is rebuilt on the next search
    const QSignalBlocker quiet(follow_);
    follow_->setChecked(doc_->following());  // off once the trace is closed
    follow_->setEnabled(doc_->canFollow());
    updateStatus();
  });
  connect(doc_, &TraceDocument::followError, this, [this](const QString& message) {
    follow_->setChecked(false);
    status_->setText(tr("stopped following: %1").arg(message));
  });
  updateStatus();
}

TracePage::~TracePage() {
  // Only a summary still running reads the document; one whose result was taken is in no
  // state at all, and waiting on it would never end.
  if (summarizing_.isRunning()) summarizing_.waitForFinished();
}

QString TracePage::statusText() const { return status_->text(); }

void TracePage::summarize(qint64 t0, qint64 t1) {
  if (summarizing_.isRunning()) {
    pending_t0_ = t0, pending_t1_ = t1, pending_ = true;
    return;
  }
  if (doc_->following()) doc_->setFollowing(false), resume_follow_ = true;
  panels_->setTabText(1, tr("Range summary: computing..."));
  panels_->setCurrentIndex(1);
  summarizing_.setFuture(summarize_range_async(*doc_, t0, t1));
}

void TracePage::updateStatus() {
  const auto& m = doc_->model();
  QString text = doc_->cutShort() ? doc_->cutShortText() + "; " : QString();
  text += tr("%1 trace, %2 events over %3")
                     .arg(QString::fromLatin1(analysis::to_string(m.format)))
                     .arg(m.event_count())
                     .arg(formatDuration(doc_->index().end_ns() - doc_->index().begin_ns()));
  if (doc_->following()) {
    const QStringList growing = doc_->unfinishedPaths();
    if (doc_->isRankTimeline())
      text += tr("; following %1 of %2 files as they grow (refreshed twice a second)").arg(growing.size()).arg(doc_->paths().size());
    else
      text += tr("; following the file as it grows (refreshed twice a second)");
  }
  if (doc_->isRankTimeline()) {
    const auto& ranks = doc_->rankGroups();
    text += tr("; %1 ranks in one timeline").arg(ranks.size());
    for (const auto& rank : ranks)
      if (rank.clock == RankGroup::Clock::aligned || rank.clock == RankGroup::Clock::unaligned) text += "; " + rank.clockText();
    if (std::all_of(ranks.begin(), ranks.end(), [](const RankGroup& r) { return r.clock == RankGroup::Clock::one_clock; }))
      text += tr(" on one host (one clock)");
    if (!ranks.empty())
      text += tr("; collectives paired across ranks by %1").arg(QString::fromLatin1(analysis::to_string(ranks.front().pairing)));
  }
  for (const auto& note : m.notes) text += "; " + QString::fromStdString(note);
  status_->setText(text);
  status_->setToolTip(text);
}

void TracePage::runSearch() {
  if (found_for_ == search_->text() && found_regex_ == regex_->isChecked()) return;
  found_for_ = search_->text();
  found_regex_ = regex_->isChecked();
  analysis::SearchQuery query{search_->text().toStdString(), regex_->isChecked(), false, {}};
  if (regex_->isChecked()) {
    // Qt's PCRE2 with JIT: much faster than std::regex over long C++ kernel names.
    QRegularExpression re(search_->text(), QRegularExpression::CaseInsensitiveOption);
    if (!re.isValid()) {
      found_ = {};
      found_.error = tr("not a regular expression: %1 (%2)").arg(search_->text(), re.errorString()).toStdString();
      return;
    }
    re.optimize();
    query.matcher = [re](std::string_view name) {
      return re.match(QString::fromUtf8(name.data(), qsizetype(name.size()))).hasMatch();
    };
  }
  found_ = doc_->search().find(query);
}

bool TracePage::step(bool forward) {
  runSearch();
  if (!found_.error.empty()) {
    matches_->setText(QString::fromStdString(found_.error));
    return false;
  }
  const quint32 at = view_->selectedEvent();
  const auto& m = doc_->model();
  const std::int64_t ts = at == TraceTimelineView::kNone ? (forward ? INT64_MIN : INT64_MAX) : m.event(at).ts_ns;
  const std::uint32_t ev = at == TraceTimelineView::kNone ? (forward ? 0 : UINT32_MAX) : at;
  auto hit = forward ? doc_->search().next(found_, ts, ev) : doc_->search().previous(found_, ts, ev);
  if (!hit) {  // wrap around
    hit = forward ? doc_->search().next(found_, INT64_MIN, 0) : doc_->search().previous(found_, INT64_MAX, UINT32_MAX);
  }
  matches_->setText(found_.count == 0 ? tr("no match") : tr("%1 matches in %2 names").arg(found_.count).arg(found_.names.size()));
  view_->setHighlightedNames(found_.names);  // every match outlined, the current one selected and zoomed to
  if (!hit) return false;
  view_->selectEvent(*hit, true);
  view_->focusSelection();
  return true;
}

bool TracePage::findNext() { return step(true); }
bool TracePage::findPrevious() { return step(false); }

}  // namespace cudascope::gui
