#include "app/gui/attention/attention_runner.h"

#include "app/gui/attention/attention_job.h"

#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>

namespace ropescope::gui {

AttentionRunner::AttentionRunner(QObject* parent)
    : QObject(parent), watcher_(new QFutureWatcher<void>(this)), loader_(new QFutureWatcher<std::shared_ptr<AttentionModel>>(this))
{
    connect(watcher_, &QFutureWatcher<void>::finished, this, [this] {
        const std::shared_ptr<AttentionJob> job = std::move(inFlight_);
        if (job && job->generation == generation_)
            Q_EMIT finished(job);
        if (rerunPending_) {
            rerunPending_ = false;
            Q_EMIT rerun();
        }
    });
    connect(loader_, &QFutureWatcher<std::shared_ptr<AttentionModel>>::finished, this, [this] {
        const std::shared_ptr<AttentionModel> model = loader_->result();
        loading_ = false;
        rerunPending_ = false; // the new model runs (or not) as its loader's caller decides
        if (!model->error.isEmpty())
            Q_EMIT loadFailed(model->error);
        else
            Q_EMIT loaded(model);
    });
}

AttentionRunner::~AttentionRunner()
{
    watcher_->waitForFinished();
    loader_->waitForFinished();
}

bool AttentionRunner::busy() const
{
    return inFlight_ != nullptr || loading_;
}

bool AttentionRunner::defer()
{
    if (!busy())
        return false;
    rerunPending_ = true;
    return true;
}

void AttentionRunner::start(std::shared_ptr<AttentionJob> job)
{
    inFlight_ = job;
    watcher_->setFuture(QtConcurrent::run([job] { job->execute(); }));
}

void AttentionRunner::runNow(AttentionJob& job)
{
    watcher_->waitForFinished(); // the model runs one request at a time; this run supersedes that one
    inFlight_.reset();
    rerunPending_ = false;
    job.execute();
}

void AttentionRunner::cancel()
{
    if (inFlight_)
        inFlight_->cancelled = true;
}

void AttentionRunner::load(const QString& dir)
{
    if (loader_->isRunning())
        loader_->waitForFinished(); // rare: a second folder picked while the first still loads
    loading_ = true;
    loader_->setFuture(QtConcurrent::run([dir] { return AttentionModel::load(dir); }));
}

std::shared_ptr<AttentionModel> AttentionRunner::loadNow(const QString& dir)
{
    loader_->waitForFinished();
    return AttentionModel::load(dir);
}

} // namespace ropescope::gui
