#include "app/gui/readout_runner.h"

#include "app/gui/window_words.h"

#include "core/geometry/errors.h"
#include "core/geometry/layout.h"
#include "core/user_schemes/python_scheme.h"

#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>

namespace ropescope::gui {
namespace {

using Result = ReadoutRunner::Result;

// Changing the layout can leave the selection on a visual token or outside the sequence: it moves to
// the text token before the first image (where a question usually starts), else the first text token.
Result compute(session::ReadoutEngine& engine, session::ExplorerState s)
{
    Result r;
    try {
        r.readouts = engine.compute(s);
        const geometry::PositionTable& t = r.readouts.table;
        if (s.selectedToken >= t.size() || (s.selectedToken >= 0 && !t.isText(s.selectedToken))) {
            s.selectedToken = t.blocks.empty() || t.blocks.front().begin == 0 ? (t.textTokens.empty() ? -1 : t.textTokens.front())
                                                                              : t.blocks.front().begin - 1;
            r.readouts = engine.compute(s);
        }
    } catch (const user_schemes::PythonError& e) {
        r.error = inWindowWords(e);
        r.detail = QString::fromStdString(e.detail());
    } catch (const geometry::InvalidInput& e) {
        r.error = inWindowWords(e);
        r.parameter = QString::fromStdString(e.parameter());
    }
    r.state = std::move(s);
    return r;
}

long long tokenCount(const session::ExplorerState& s)
{
    try {
        return geometry::parseLayout(s.layout).tokenCount();
    } catch (const geometry::InvalidInput&) {
        return 0; // reported by the computation, at once
    }
}

} // namespace

ReadoutRunner::ReadoutRunner(QObject* parent) : QObject(parent), watcher_(new QFutureWatcher<Result>(this))
{
    connect(watcher_, &QFutureWatcher<Result>::finished, this, &ReadoutRunner::workerDone);
}

ReadoutRunner::~ReadoutRunner()
{
    watcher_->waitForFinished(); // the worker uses workerEngine_
}

std::optional<Result> ReadoutRunner::request(const session::ExplorerState& state)
{
    ++generation_;
    const long long tokens = tokenCount(state);
    if (tokens <= kBackgroundTokens) {
        waiting_.reset(); // this newer state wins over one still waiting for the worker
        return compute(engine_, state);
    }
    Q_EMIT started(tokens);
    if (running_)
        waiting_ = state;
    else
        launch(state);
    return std::nullopt;
}

bool ReadoutRunner::busy() const
{
    return running_ || waiting_.has_value();
}

void ReadoutRunner::launch(const session::ExplorerState& state)
{
    running_ = true;
    launchedGeneration_ = generation_;
    watcher_->setFuture(QtConcurrent::run([this, state] { return compute(workerEngine_, state); }));
}

void ReadoutRunner::workerDone()
{
    running_ = false;
    if (waiting_) {
        const session::ExplorerState next = *waiting_;
        waiting_.reset();
        launch(next); // the finished result is stale: a newer state waited for it
        return;
    }
    const bool newest = launchedGeneration_ == generation_;
    const Result result = watcher_->result();
    Q_EMIT idle();
    if (newest)
        Q_EMIT finished(result);
}

} // namespace ropescope::gui
