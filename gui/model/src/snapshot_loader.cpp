#include <cudascope/gui/snapshot_loader.h>

#include <cudascope/analysis/loader.h>

#include <QMetaObject>
#include <QPointer>

namespace cudascope::gui {

SnapshotLoader::SnapshotLoader(QObject* parent) : QObject(parent) {
  qRegisterMetaType<std::shared_ptr<const cudascope::gui::LoadedSnapshot>>();
}

SnapshotLoader::~SnapshotLoader() {
  cancel();
  if (worker_.joinable()) worker_.join();
}

void SnapshotLoader::cancel() {
  if (cancel_) cancel_->store(true);
}

void SnapshotLoader::wait() {
  if (worker_.joinable()) worker_.join();
}

void SnapshotLoader::start(const QString& path) {
  cancel();
  if (worker_.joinable()) worker_.join();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  busy_ = true;
  const unsigned generation = ++generation_;
  QPointer<SnapshotLoader> self(this);
  auto cancel_flag = cancel_;
  worker_ = std::thread([self, path, cancel_flag, generation] {
    // Results are posted back to the loader's thread; a stale generation is dropped there.
    auto post = [self](auto fn) {
      if (self) QMetaObject::invokeMethod(self.data(), fn, Qt::QueuedConnection);
    };
    int last = -1;
    analysis::LoadOptions options;
    options.cancel = cancel_flag.get();
    options.progress = [&](double f) {
      const int permille = static_cast<int>(f * 900);  // the last 10% is indexing
      if (permille != last) {
        last = permille;
        post([self, permille, generation] {
          if (self && self->generation_ == generation) emit self->progress(permille);
        });
      }
    };
    auto result = analysis::load_snapshot(path.toStdString(), options);
    if (!result) {
      const QString message = QString::fromStdString(result.error().message());
      const bool cancelled = result.error().cancelled;
      post([self, message, cancelled, generation] {
        if (!self || self->generation_ != generation) return;
        self->busy_ = false;
        emit self->failed(message, cancelled);
      });
      return;
    }
    auto indexed = index_snapshot(std::move(result).value());
    if (cancel_flag->load()) {
      post([self, path, generation] {
        if (!self || self->generation_ != generation) return;
        self->busy_ = false;
        emit self->failed(path + ": loading cancelled", true);
      });
      return;
    }
    post([self, indexed, path, generation] {
      if (!self || self->generation_ != generation) return;
      self->busy_ = false;
      emit self->progress(1000);
      emit self->loaded(indexed, path);
    });
  });
}

}  // namespace cudascope::gui
