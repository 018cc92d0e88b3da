#include "main_window.h"

#include <cudascope/gui/file_kind.h>
#include <cudascope/gui/record_table_model.h>
#include <cudascope/gui/snapshot_loader.h>
#include <cudascope/gui/snapshot_page.h>
#include <cudascope/gui/trace_loader.h>
#include <cudascope/gui/trace_page.h>
#include <cudascope/gui/trace_timeline_view.h>

#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QPushButton>
#include <QScreen>
#include <QSettings>
#include <QStatusBar>
#include <QTabBar>
#include <QTabWidget>
#include <QUrl>

namespace cudascope::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("cudascope viewer"));
  setAcceptDrops(true);
  qRegisterMetaType<cudascope::gui::TracePage*>();
  compare_loader_ = new SnapshotLoader(this);

  documents_ = new QTabWidget;
  documents_->setTabsClosable(true);
  documents_->setMovable(true);
  documents_->setDocumentMode(true);
  welcome_ = new QLabel(tr("Open a snapshot or a trace: File > Open, or drop files here.\n\n"
                           "Allocator snapshots: PyTorch's _dump_snapshot pickles, cudascope JSON.\n"
                           "Traces: cudascope run, torch.profiler (Kineto), any Chrome trace. Plain or gzip.\n\n"
                           "Help > Keyboard shortcuts lists the keys."));
  static_cast<QLabel*>(welcome_)->setAlignment(Qt::AlignCenter);
  documents_->addTab(welcome_, tr("Welcome"));
  setCentralWidget(documents_);
  // The status bar speaks of the document shown.
  connect(documents_, &QTabWidget::currentChanged, this, [this](int index) {
    if (auto* page = qobject_cast<TracePage*>(documents_->widget(index))) {
      QString text = page->document()->displayName() + ": " + page->statusText();
      status_->setText(text);
    } else if (auto* snap = qobject_cast<SnapshotPage*>(documents_->widget(index))) {
      last_snapshot_ = snap;
    }
  });
  connect(documents_, &QTabWidget::tabCloseRequested, this, [this](int index) {
    QWidget* page = documents_->widget(index);
    documents_->removeTab(index);
    if (page == last_snapshot_) last_snapshot_ = snapshotPages().isEmpty() ? nullptr : snapshotPages().back();
    if (page != welcome_) page->deleteLater();
  });

  auto* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open..."), QKeySequence::Open, this, [this] {
    const QStringList paths = QFileDialog::getOpenFileNames(this, tr("Open snapshots or traces"), {},
                                                            tr("Snapshots and traces (*.pickle *.pkl *.json *.gz);;All files (*)"));
    openFiles(paths);
  });
  recent_ = file->addMenu(tr("Open &Recent"));
  file->addAction(tr("&Compare with..."), this, [this] {
    const QString path = QFileDialog::getOpenFileName(this, tr("Compare with snapshot"), {},
                                                      tr("Snapshots (*.pickle *.pkl *.json *.gz);;All files (*)"));
    if (!path.isEmpty()) compareWith(path);
  });
  file->addSeparator();
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  auto* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("&Keyboard shortcuts"), QKeySequence(Qt::Key_F1), this,
                  [this] { QMessageBox::information(this, tr("Keyboard shortcuts"), shortcutsText()); });
  help->addAction(tr("&About cudascope viewer"), this, [this] {
    QMessageBox::about(this, tr("About cudascope viewer"),
                       tr("cudascope viewer: CUDA caching-allocator snapshots and traces.\nFiles are told apart by content."));
  });
  rebuildRecentMenu();

  progress_ = new QProgressBar;
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(240);
  cancel_ = new QPushButton(tr("Cancel"));
  status_ = new QLabel(tr("Open a file: File > Open (or drop it here) - an allocator snapshot (PyTorch pickle or cudascope "
                          "JSON) or a trace (cudascope run, torch.profiler or any Chrome trace), plain or gzip"));
  status_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  // Clipped when long rather than widening the window past the screen.
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  setBusy(false, {});
  connect(cancel_, &QPushButton::clicked, this, [this] {
    for (auto* l : findChildren<SnapshotLoader*>()) l->cancel();
    for (auto* l : findChildren<TraceLoader*>()) l->cancel();
  });
  connect(compare_loader_, &SnapshotLoader::progress, progress_, &QProgressBar::setValue);
  connect(compare_loader_, &SnapshotLoader::loaded, this, [this](auto loaded, const QString& path) {
    --loads_;
    updateBusy();
    SnapshotPage* page = snapshotPage();
    if (!page) return;
    page->setComparison(std::move(loaded), path);
    status_->setText(tr("Compared %1 (A) with %2 (B)").arg(QFileInfo(page->path()).fileName(), QFileInfo(path).fileName()));
  });
  connect(compare_loader_, &SnapshotLoader::failed, this, [this](const QString& message, bool cancelled) {
    --loads_;
    updateBusy();
    fail(message, tr("Cannot open snapshot"), cancelled);
  });
  const QScreen* screen = QGuiApplication::primaryScreen();
  resize(initialSize(screen ? screen->availableGeometry().size() : QSize(1400, 860)));
}

MainWindow::~MainWindow() = default;

QSize MainWindow::initialSize(QSize available) {
  // 90% of the screen, at most 1600x1000, never past its edge (QT_SCALE_FACTOR shrinks it).
  const int w = std::min(1600, available.width() * 9 / 10), h = std::min(1000, available.height() * 9 / 10);
  return QSize(std::max(std::min(640, available.width()), w), std::max(std::min(480, available.height()), h));
}

QString MainWindow::shortcutsText() {
  return tr("Timelines (memory and trace), as in Perfetto:\n"
            "  W / S          zoom in / out (at the pointer)\n"
            "  A / D          pan left / right\n"
            "  F              zoom to the selection\n"
            "  Home           show everything\n"
            "  Ctrl+wheel     zoom at the pointer (the wheel alone too)\n"
            "  Shift+wheel    pan (memory) / scroll rows (trace)\n"
            "  +/- and Left/Right work in the memory timelines too\n"
            "  click          select an allocation or event; its stack is pinned\n"
            "  Shift+drag     select a time range (trace: its summary)\n"
            "  Esc            clear the selection (trace)\n"
            "\nEverywhere:\n"
            "  Ctrl+O         open files (or drop them on the window)\n"
            "  Ctrl+F         search (trace): matches highlighted, Enter / Shift+Enter step through them\n"
            "  Ctrl+C         in the pinned stack: copy the whole stack, full names\n"
            "                 in a table or a table's stack list: copy the current cell, uncut\n"
            "  F1             this list\n"
            "  Ctrl+Q         quit");
}

QString MainWindow::statusText() const { return status_->text(); }

void MainWindow::setBusy(bool busy, const QString& what) {
  progress_->setVisible(busy);
  cancel_->setVisible(busy);
  if (busy) {
    progress_->setValue(0);
    status_->setText(what);
  }
}

void MainWindow::updateBusy() {
  if (loads_ <= 0) {
    loads_ = 0;
    setBusy(false, {});
  }
}

void MainWindow::fail(const QString& message, const QString& title, bool cancelled) {
  last_error_ = message;
  status_->setText(message);
  emit loadFailed(message);
  if (!cancelled && isVisible() && !qEnvironmentVariableIsSet("CUDASCOPE_VIEWER_NO_DIALOGS"))
    QMessageBox::warning(this, title, message);
}

QList<TracePage*> MainWindow::tracePages() const {
  QList<TracePage*> pages;
  for (int i = 0; i < documents_->count(); ++i)
    if (auto* page = qobject_cast<TracePage*>(documents_->widget(i))) pages << page;
  return pages;
}

QList<SnapshotPage*> MainWindow::snapshotPages() const {
  QList<SnapshotPage*> pages;
  for (int i = 0; i < documents_->count(); ++i)
    if (auto* page = qobject_cast<SnapshotPage*>(documents_->widget(i))) pages << page;
  return pages;
}

SnapshotPage* MainWindow::snapshotPage() const {
  if (auto* page = qobject_cast<SnapshotPage*>(documents_->currentWidget())) return page;
  return last_snapshot_;
}

QTabWidget* MainWindow::tabs() const { return snapshotPage() ? snapshotPage()->tabs() : nullptr; }

std::shared_ptr<const LoadedSnapshot> MainWindow::current() const {
  return snapshotPage() ? snapshotPage()->snapshot() : nullptr;
}

void MainWindow::openFile(const QString& path) { openFiles({path}); }

void MainWindow::openFiles(const QStringList& paths) {
  QStringList traces;
  for (const QString& path : paths) {
    const FileSniff sniff = sniff_file(path);
    if (!sniff.error.isEmpty()) fail(sniff.error, tr("Cannot open file"), false);
    else if (sniff.kind == FileKind::trace) traces << path;
    else openSnapshot(path);  // a snapshot, or neither: the snapshot loader says precisely what is wrong where
  }
  if (!traces.isEmpty()) openTraces(traces);
}

void MainWindow::openSnapshot(const QString& path) {
  // One loader per file: several snapshots load side by side, each into its own tab.
  auto* loader = new SnapshotLoader(this);
  ++loads_;
  setBusy(true, tr("Loading %1...").arg(path));
  connect(loader, &SnapshotLoader::progress, progress_, &QProgressBar::setValue);
  connect(loader, &SnapshotLoader::loaded, this, [this, loader](auto loaded, const QString& p) {
    loader->deleteLater();
    --loads_;
    updateBusy();
    showSnapshot(std::move(loaded), p);
  });
  connect(loader, &SnapshotLoader::failed, this, [this, loader](const QString& message, bool cancelled) {
    loader->deleteLater();
    --loads_;
    updateBusy();
    fail(message, tr("Cannot open snapshot"), cancelled);
  });
  loader->start(path);
}

void MainWindow::openTraces(const QStringList& paths) {
  auto* loader = new TraceLoader(this);
  ++loads_;
  setBusy(true, paths.size() == 1 ? tr("Loading trace %1...").arg(paths.front()) : tr("Loading %1 traces...").arg(paths.size()));
  connect(loader, &TraceLoader::progress, progress_, &QProgressBar::setValue);
  connect(loader, &TraceLoader::finished, this, [this, loader] {
    loader->deleteLater();
    --loads_;
    updateBusy();
  });
  connect(loader, &TraceLoader::loaded, this, [this](TraceDocument* doc) {
    auto* page = new TracePage(doc);
    if (const int i = documents_->indexOf(welcome_); i >= 0) documents_->removeTab(i);
    const QString name = doc->displayName();
    const int tab = documents_->addTab(page, doc->cutShort() ? tr("%1 (cut short)").arg(name) : name);
    documents_->setTabToolTip(tab, doc->paths().join("\n") + (doc->cutShort() ? "\n" + doc->cutShortText() : QString()));
    if (doc->cutShort()) documents_->tabBar()->setTabTextColor(tab, QColor(230, 60, 60));
    documents_->setCurrentIndex(tab);
    setWindowTitle(name + tr(" - cudascope viewer"));
    QString text = tr("%1: %2 events in %3 rows; read in %4 s, indexed in %5 s%6")
                       .arg(name)
                       .arg(doc->model().event_count())
                       .arg(doc->index().rows().size())
                       .arg(doc->loadSeconds(), 0, 'f', 2)
                       .arg(doc->indexSeconds(), 0, 'f', 2)
                       .arg(doc->following() ? tr("; following it as it grows") : QString());
    if (doc->cutShort()) text = name + ": " + doc->cutShortText() + " " + text.mid(name.size() + 2);
    for (const auto& rank : doc->rankGroups())
      if (rank.clock == RankGroup::Clock::aligned || rank.clock == RankGroup::Clock::unaligned) text += "; " + rank.clockText();
    status_->setText(text);
    for (const QString& path : doc->paths()) rememberRecent(path);
    page->view()->setFocus();
    emit traceShown(page);
  });
  connect(loader, &TraceLoader::failed, this,
          [this](const QString& message, bool cancelled) { fail(message, tr("Cannot open trace"), cancelled); });
  loader->start(paths);
}

void MainWindow::compareWith(const QString& path) {
  if (!snapshotPage()) {
    status_->setText(tr("Open a snapshot first, then compare it with another."));
    return;
  }
  ++loads_;
  setBusy(true, tr("Loading %1 for comparison...").arg(path));
  compare_loader_->start(path);
}

void MainWindow::showSnapshot(std::shared_ptr<const LoadedSnapshot> loaded, const QString& path) {
  auto* page = new SnapshotPage;
  page->setSnapshot(loaded, path);
  connect(page, &SnapshotPage::comparisonShown, this, &MainWindow::comparisonShown);
  connect(page, &SnapshotPage::compareRequested, this, [this] {
    const QString other = QFileDialog::getOpenFileName(this, tr("Compare with snapshot"), {},
                                                       tr("Snapshots (*.pickle *.pkl *.json *.gz);;All files (*)"));
    if (!other.isEmpty()) compareWith(other);
  });
  if (const int i = documents_->indexOf(welcome_); i >= 0) documents_->removeTab(i);
  const int tab = documents_->addTab(page, QFileInfo(path).fileName());
  documents_->setTabToolTip(tab, path);
  documents_->setCurrentIndex(tab);
  last_snapshot_ = page;
  const auto& f = loaded->figures;
  setWindowTitle(QFileInfo(path).fileName() + tr(" - cudascope viewer"));
  QString text = tr("%1: %2 segments, %3 blocks, %4 trace entries; reserved %5, allocated %6")
                     .arg(QFileInfo(path).fileName())
                     .arg(f.segments)
                     .arg(f.blocks)
                     .arg(f.trace_entries)
                     .arg(formatBytes(f.reserved_bytes), formatBytes(f.allocated_bytes));
  if (f.oom_entries) text += tr("; %1 out-of-memory entries (red markers; hover or click one)").arg(f.oom_entries);
  if (loaded->snapshot->device_ids().size() > 1) text += tr("; timelines show device %1").arg(loaded->device);
  status_->setText(text);
  rememberRecent(path);
  page->focusView();  // +/-, W/A/S/D work at once, without a click on the plot
  emit snapshotShown();
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  if (paths.isEmpty()) return;
  event->acceptProposedAction();
  openFiles(paths);
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
