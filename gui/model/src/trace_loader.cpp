#include <cudascope/gui/trace_loader.h>

#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace cudascope::gui {

TraceLoader::TraceLoader(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<Result>::finished, this, [this] {
    Result r = watcher_.result();
    if (r.cancelled) {
      emit failed(r.errors.isEmpty() ? tr("loading cancelled") : r.errors.front(), true);
      emit finished();
      return;
    }
    if (!r.documents.empty()) emit progress(1000);
    for (auto& [path, trace] : r.documents) {
      // LoadedTrace moves into the document; the shared_ptr held only the hand-over.
      auto owned = std::make_unique<LoadedTrace>(std::move(*trace));
      emit loaded(new TraceDocument(path, std::move(owned)));
    }
    for (const QString& error : r.errors) emit failed(error, false);
    emit finished();
  });
}

TraceLoader::~TraceLoader() {
  cancel();
  watcher_.waitForFinished();
}

void TraceLoader::cancel() {
  if (cancel_) cancel_->store(true);
}

void TraceLoader::start(const QString& path) { start(QStringList{path}); }

void TraceLoader::start(const QStringList& paths) {
  cancel();
  watcher_.waitForFinished();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  QPointer<TraceLoader> self(this);
  auto cancel_flag = cancel_;
  watcher_.setFuture(QtConcurrent::run([self, paths, cancel_flag] {
    int last = -1;
    auto report = [&](double f) {
      const int permille = static_cast<int>(f * 1000);
      if (permille != last && self) {
        last = permille;
        QMetaObject::invokeMethod(self.data(), [self, permille] { if (self) emit self->progress(permille); },
                                  Qt::QueuedConnection);
      }
      return !cancel_flag->load();
    };
    Result r;
    auto loaded = load_traces_for_view(paths, report, r.errors, r.cancelled);
    if (cancel_flag->load()) {
      if (!r.cancelled) r.errors.prepend(paths.join(", ") + ": loading cancelled");
      r.cancelled = true;
      return r;
    }
    for (auto& doc : loaded) r.documents.emplace_back(doc.path, std::shared_ptr<LoadedTrace>(std::move(doc.trace)));
    return r;
  }));
}

}  // namespace cudascope::gui
