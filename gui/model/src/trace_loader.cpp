#include <cudascope/gui/trace_loader.h>

#include <QPointer>
#include <QtConcurrent/QtConcurrentRun>

namespace cudascope::gui {

TraceLoader::TraceLoader(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<Result>::finished, this, [this] {
    Result r = watcher_.result();
    if (!r.trace) {
      emit failed(r.error, r.cancelled);
      return;
    }
    // LoadedTrace moves into the document; the shared_ptr held only the hand-over.
    auto owned = std::make_unique<LoadedTrace>(std::move(*r.trace));
    emit progress(1000);
    emit loaded(new TraceDocument(path_, std::move(owned)));
  });
}

TraceLoader::~TraceLoader() {
  cancel();
  watcher_.waitForFinished();
}

void TraceLoader::cancel() {
  if (cancel_) cancel_->store(true);
}

void TraceLoader::start(const QString& path) {
  cancel();
  watcher_.waitForFinished();
  path_ = path;
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  QPointer<TraceLoader> self(this);
  auto cancel_flag = cancel_;
  watcher_.setFuture(QtConcurrent::run([self, path, cancel_flag] {
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
    auto loaded = load_trace_for_view(path, report, r.error, r.cancelled);
    if (loaded && cancel_flag->load()) {
      r.error = path + ": loading cancelled";
      r.cancelled = true;
      loaded.reset();
    }
    r.trace = std::move(loaded);
    return r;
  }));
}

}  // namespace cudascope::gui
