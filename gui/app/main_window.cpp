#include "main_window.h"

#include <cudascope/gui/allocator_state_page.h>
#include <cudascope/gui/compare_model.h>
#include <cudascope/gui/figures_model.h>
#include <cudascope/gui/record_table_model.h>
#include <cudascope/gui/record_table_page.h>
#include <cudascope/gui/snapshot_loader.h>
#include <cudascope/gui/file_kind.h>
#include <cudascope/gui/timeline_view.h>
#include <cudascope/gui/trace_loader.h>
#include <cudascope/gui/trace_page.h>
#include <cudascope/gui/trace_timeline_view.h>

#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QVBoxLayout>

namespace cudascope::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("cudascope viewer"));
  qRegisterMetaType<cudascope::gui::TracePage*>();
  loader_ = new SnapshotLoader(this);
  compare_loader_ = new SnapshotLoader(this);

  documents_ = new QTabWidget;
  documents_->setTabsClosable(true);
  documents_->setMovable(true);
  documents_->setDocumentMode(true);
  tabs_ = new QTabWidget;
  active_ = new TimelineView;
  segments_ = new TimelineView;
  state_ = new AllocatorStatePage;
  segment_table_ = new RecordTablePage(RecordTablePage::Kind::segments);
  block_table_ = new RecordTablePage(RecordTablePage::Kind::blocks);
  trace_table_ = new RecordTablePage(RecordTablePage::Kind::trace);
  figures_ = new FiguresModel(this);
  auto* figures_view = new QTableView;
  figures_view->setModel(figures_);
  figures_view->horizontalHeader()->setStretchLastSection(true);
  figures_view->horizontalHeader()->setSectionResizeMode(0, QHeaderView::ResizeToContents);

  compare_ = new CompareModel(this);
  auto* compare_page = new QWidget;
  auto* compare_layout = new QVBoxLayout(compare_page);
  auto* compare_bar = new QHBoxLayout;
  auto* compare_button = new QPushButton(tr("Compare with..."));
  group_by_ = new QComboBox;
  group_by_->addItem(tr("group by user frame"), int(analysis::GroupBy::user_frame));
  group_by_->addItem(tr("group by top frame"), int(analysis::GroupBy::top_frame));
  group_by_->addItem(tr("group by NVTX range"), int(analysis::GroupBy::nvtx_range));
  compare_label_ = new QLabel(tr("Open a second snapshot to see what grew, by allocating frame or NVTX range."));
  compare_bar->addWidget(compare_button);
  compare_bar->addWidget(group_by_);
  compare_bar->addWidget(compare_label_, 1);
  auto* compare_view = new QTableView;
  compare_view->setModel(compare_);
  compare_view->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
  compare_layout->addLayout(compare_bar);
  compare_layout->addWidget(compare_view, 1);

  tabs_->addTab(active_, tr("Active memory"));
  tabs_->addTab(segments_, tr("Cached segments"));
  tabs_->addTab(state_, tr("Allocator state"));
  tabs_->addTab(segment_table_, tr("Segments"));
  tabs_->addTab(block_table_, tr("Blocks"));
  tabs_->addTab(trace_table_, tr("Trace"));
  tabs_->addTab(figures_view, tr("Figures"));
  tabs_->addTab(compare_page, tr("Compare"));
  snapshot_page_ = new QWidget;
  auto* snapshot_layout = new QVBoxLayout(snapshot_page_);
  snapshot_layout->setContentsMargins(0, 0, 0, 0);
  snapshot_layout->addWidget(tabs_);
  documents_->addTab(snapshot_page_, tr("Snapshot"));
  setCentralWidget(documents_);
  // The status bar speaks of the document shown.
  connect(documents_, &QTabWidget::currentChanged, this, [this](int index) {
    if (auto* page = qobject_cast<TracePage*>(documents_->widget(index)))
      status_->setText(page->document()->displayName() + ": " + page->statusText());
  });
  connect(documents_, &QTabWidget::tabCloseRequested, this, [this](int index) {
    QWidget* page = documents_->widget(index);
    documents_->removeTab(index);
    if (page != snapshot_page_) page->deleteLater();
  });

  auto* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open..."), QKeySequence::Open, this, [this] {
    const QStringList paths = QFileDialog::getOpenFileNames(
        this, tr("Open snapshots or traces"), {},
        tr("Snapshots and traces (*.pickle *.pkl *.json *.gz);;All files (*)"));
    openFiles(paths);
  });
  recent_ = file->addMenu(tr("Open &Recent"));
  auto compare_dialog = [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Compare with snapshot"), {},
                                                      tr("Snapshots (*.pickle *.pkl *.json *.gz);;All files (*)"));
    if (!path.isEmpty()) compareWith(path);
  };
  file->addAction(tr("&Compare with..."), this, compare_dialog);
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  connect(compare_button, &QPushButton::clicked, this, compare_dialog);
  connect(group_by_, qOverload<int>(&QComboBox::activated), this, [this] { updateComparison(); });
  rebuildRecentMenu();

  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(240);
  cancel_ = new QPushButton(tr("Cancel"));
  status_ = new QLabel(tr("Open a file: File > Open - an allocator snapshot (PyTorch pickle or cudascope JSON) or a trace "
                          "(cudascope run, torch.profiler or any Chrome trace), plain or gzip"));
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  setBusy(false, {});
  connect(cancel_, &QPushButton::clicked, this, [this] {
    loader_->cancel();
    compare_loader_->cancel();
    for (auto* l : findChildren<TraceLoader*>()) l->cancel();
  });

  for (auto* l : {loader_, compare_loader_}) connect(l, &SnapshotLoader::progress, progress_, &QProgressBar::setValue);
  connect(loader_, &SnapshotLoader::loaded, this, [this](auto loaded, const QString& path) {
    setBusy(false, {});
    showSnapshot(std::move(loaded), path);
  });
  connect(compare_loader_, &SnapshotLoader::loaded, this, [this](auto loaded, const QString& path) {
    setBusy(false, {});
    compared_ = std::move(loaded);
    compared_path_ = path;
    updateComparison();
    status_->setText(tr("Compared %1 (A) with %2 (B): %3 frames")
                         .arg(QFileInfo(current_path_).fileName(), QFileInfo(path).fileName())
                         .arg(compare_->rowCount()));
    tabs_->setCurrentIndex(tabs_->count() - 1);
  });
  for (auto* l : {loader_, compare_loader_})
    connect(l, &SnapshotLoader::failed, this, [this](const QString& message, bool cancelled) {
      setBusy(false, {});
      last_error_ = message;
      status_->setText(message);
      emit loadFailed(message);
      if (!cancelled && isVisible() && !qEnvironmentVariableIsSet("CUDASCOPE_VIEWER_NO_DIALOGS"))
        QMessageBox::warning(this, tr("Cannot open snapshot"), message);
    });
  resize(1400, 860);
}

MainWindow::~MainWindow() = default;

QString MainWindow::statusText() const { return status_->text(); }

void MainWindow::setBusy(bool busy, const QString& what) {
  progress_->setVisible(busy);
  cancel_->setVisible(busy);
  if (busy) {
    progress_->setValue(0);
    status_->setText(what);
  }
}

QList<TracePage*> MainWindow::tracePages() const {
  QList<TracePage*> pages;
  for (int i = 0; i < documents_->count(); ++i)
    if (auto* page = qobject_cast<TracePage*>(documents_->widget(i))) pages << page;
  return pages;
}

void MainWindow::openFile(const QString& path) {
  const FileSniff sniff = sniff_file(path);
  if (!sniff.error.isEmpty()) {
    last_error_ = sniff.error;
    status_->setText(sniff.error);
    emit loadFailed(sniff.error);
    if (isVisible() && !qEnvironmentVariableIsSet("CUDASCOPE_VIEWER_NO_DIALOGS"))
      QMessageBox::warning(this, tr("Cannot open file"), sniff.error);
    return;
  }
  if (sniff.kind == FileKind::trace) return openTraces({path});
  // A snapshot, or neither: the snapshot loader says precisely what is wrong where.
  setBusy(true, tr("Loading %1...").arg(path));
  loader_->start(path);
}

void MainWindow::openFiles(const QStringList& paths) {
  QStringList traces;
  for (const QString& path : paths) {
    if (sniff_file(path).kind == FileKind::trace) traces << path;
    else openFile(path);  // a snapshot, or an error named by openFile
  }
  if (!traces.isEmpty()) openTraces(traces);
}

void MainWindow::openTraces(const QStringList& paths) {
  auto* loader = new TraceLoader(this);
  ++trace_loads_;
  setBusy(true, paths.size() == 1 ? tr("Loading trace %1...").arg(paths.front())
                                  : tr("Loading %1 traces...").arg(paths.size()));
  connect(loader, &TraceLoader::progress, progress_, &QProgressBar::setValue);
  connect(loader, &TraceLoader::finished, this, [this, loader] {
    loader->deleteLater();
    if (--trace_loads_ == 0 && !loader_->busy() && !compare_loader_->busy()) setBusy(false, {});
  });
  connect(loader, &TraceLoader::loaded, this, [this](TraceDocument* doc) {
    auto* page = new TracePage(doc);
    // An empty snapshot document makes way for the first trace.
    if (!current_) {
      const int i = documents_->indexOf(snapshot_page_);
      if (i >= 0) documents_->removeTab(i);
    }
    const QString name = doc->displayName();
    const int tab = documents_->addTab(page, name);
    documents_->setTabToolTip(tab, doc->paths().join("\n"));
    documents_->setCurrentIndex(tab);
    setWindowTitle(name + tr(" - cudascope viewer"));
    QString text = tr("%1: %2 events in %3 rows; read in %4 s, indexed in %5 s%6")
                       .arg(name)
                       .arg(doc->model().event_count())
                       .arg(doc->index().rows().size())
                       .arg(doc->loadSeconds(), 0, 'f', 2)
                       .arg(doc->indexSeconds(), 0, 'f', 2)
                       .arg(doc->following() ? tr("; following it as it grows") : QString());
    for (const auto& rank : doc->rankGroups())
      if (rank.clock == RankGroup::Clock::aligned || rank.clock == RankGroup::Clock::unaligned) text += "; " + rank.clockText();
    status_->setText(text);
    for (const QString& path : doc->paths()) rememberRecent(path);
    page->view()->setFocus();
    emit traceShown(page);
  });
  connect(loader, &TraceLoader::failed, this, [this](const QString& message, bool cancelled) {
    last_error_ = message;
    status_->setText(message);
    emit loadFailed(message);
    if (!cancelled && isVisible() && !qEnvironmentVariableIsSet("CUDASCOPE_VIEWER_NO_DIALOGS"))
      QMessageBox::warning(this, tr("Cannot open trace"), message);
  });
  loader->start(paths);
}

void MainWindow::showSnapshotDocument(const QString& title) {
  int i = documents_->indexOf(snapshot_page_);
  if (i < 0) i = documents_->insertTab(0, snapshot_page_, title);
  documents_->setTabText(i, title);
  documents_->setCurrentIndex(i);
}

void MainWindow::compareWith(const QString& path) {
  if (!current_) {
    status_->setText(tr("Open a snapshot first, then compare it with another."));
    return;
  }
  setBusy(true, tr("Loading %1 for comparison...").arg(path));
  compare_loader_->start(path);
}

void MainWindow::showSnapshot(std::shared_ptr<const LoadedSnapshot> loaded, const QString& path) {
  current_ = std::move(loaded);
  current_path_ = path;
  showSnapshotDocument(QFileInfo(path).fileName());
  const auto& f = current_->figures;
  active_->setTimeline(current_, current_->allocations, tr("Active memory (allocated + pending free), device %1").arg(current_->device));
  segments_->setTimeline(current_, current_->segments, tr("Cached segments (reserved), device %1").arg(current_->device));
  state_->setSnapshot(current_);
  segment_table_->setSnapshot(current_);
  block_table_->setSnapshot(current_);
  trace_table_->setSnapshot(current_);
  figures_->setFigures(f);
  setWindowTitle(QFileInfo(path).fileName() + tr(" - cudascope viewer"));
  QString text = tr("%1: %2 segments, %3 blocks, %4 trace entries; reserved %5, allocated %6")
                     .arg(QFileInfo(path).fileName())
                     .arg(f.segments)
                     .arg(f.blocks)
                     .arg(f.trace_entries)
                     .arg(formatBytes(f.reserved_bytes), formatBytes(f.allocated_bytes));
  if (f.oom_entries) text += tr("; %1 OOM entries (red lines)").arg(f.oom_entries);
  if (current_->snapshot->device_ids().size() > 1) text += tr("; timelines show device %1").arg(current_->device);
  status_->setText(text);
  rememberRecent(path);
  if (compared_) updateComparison();
  emit snapshotShown();
}

void MainWindow::updateComparison() {
  if (!current_ || !compared_) return;
  const auto group = static_cast<analysis::GroupBy>(group_by_->currentData().toInt());
  compare_->setComparison(analysis::compare_snapshots(*current_->snapshot, *compared_->snapshot, group));
  const auto& c = compare_->comparison();
  compare_label_->setText(tr("A = %1 (%2 live)   B = %3 (%4 live)   growth %5")
                              .arg(QFileInfo(current_path_).fileName(), formatBytes(c.total_a),
                                   QFileInfo(compared_path_).fileName(), formatBytes(c.total_b))
                              .arg((c.total_b >= c.total_a ? "+" : "-") +
                                   formatBytes(c.total_b >= c.total_a ? c.total_b - c.total_a : c.total_a - c.total_b)));
  emit comparisonShown();
}

void MainWindow::rememberRecent(const QString& path) {
  QSettings settings("cudascope", "viewer");
  QStringList recent = settings.value("recent").toStringList();
  recent.removeAll(QFileInfo(path).absoluteFilePath());
  recent.prepend(QFileInfo(path).absoluteFilePath());
  while (recent.size() > 10) recent.removeLast();
  settings.setValue("recent", recent);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  recent_->clear();
  const QStringList recent = QSettings("cudascope", "viewer").value("recent").toStringList();
  for (const QString& path : recent) recent_->addAction(path, this, [this, path] { openFile(path); });
  recent_->setEnabled(!recent.isEmpty());
}

}  // namespace cudascope::gui
