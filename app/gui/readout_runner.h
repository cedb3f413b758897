#pragma once
#include "core/session/explorer_state.h"
#include "core/session/readouts.h"

#include <QObject>
#include <QString>

#include <optional>

template <typename T> class QFutureWatcher;

namespace ropescope::gui {

// Computes the explorer's readouts (position table, PTD of every scheme, crowding, prior) for a state.
// Ordinary layouts are computed at once, on the caller's thread; large ones (over kBackgroundTokens) on a
// worker thread, so the window stays live. Only the newest request counts: requests made while a worker
// runs wait and collapse into one run of the newest, and a result that a newer request overtook is
// dropped.
class ReadoutRunner : public QObject {
    Q_OBJECT
public:
    static constexpr long long kBackgroundTokens = 100000;

    struct Result {
        session::ExplorerState state; // as requested, with the selection moved onto a text token if needed
        session::Readouts readouts;
        QString error;     // set when the state cannot be drawn (the message names the parameter)
        QString parameter; // the parameter the error is about, as sessions spell it ("alpha", "layout"), or empty
        QString detail;    // a scheme file's error: the traceback's last lines
    };

    explicit ReadoutRunner(QObject* parent = nullptr);
    ~ReadoutRunner() override;

    // The result now, or nothing when the state went to the worker (finished() brings it).
    std::optional<Result> request(const session::ExplorerState& state);
    bool busy() const;

Q_SIGNALS:
    void started(long long tokens);
    void finished(const ropescope::gui::ReadoutRunner::Result& result);
    void idle();

private:
    void launch(const session::ExplorerState& state);
    void workerDone();

    session::ReadoutEngine engine_;       // the caller's thread only
    session::ReadoutEngine workerEngine_; // one worker at a time
    QFutureWatcher<Result>* watcher_;
    std::optional<session::ExplorerState> waiting_;
    bool running_ = false;                      // from launch() until its result is handled (the future ends earlier)
    unsigned long long generation_ = 0;         // of the newest request
    unsigned long long launchedGeneration_ = 0; // of the request the worker computes
};

} // namespace ropescope::gui
