#pragma once
#include <QObject>
#include <QString>

#include <memory>

template <typename T> class QFutureWatcher;

namespace ropescope::gui {

struct AttentionJob;
struct AttentionModel;

// Runs the Attention tab's model off the UI thread, as ReadoutRunner runs the explorer's readouts. One
// run at a time (a Vlm is not re-entrant); requests made during a run collapse into one rerun() with the
// newest inputs; a result that a newer model, image or blocking run superseded is dropped. Model folders
// load on a worker too (a checkpoint of several GB takes a while).
class AttentionRunner : public QObject {
    Q_OBJECT
public:
    explicit AttentionRunner(QObject* parent = nullptr);
    ~AttentionRunner() override;

    // The generation a new job carries; results of older ones are dropped. supersede() drops the ones
    // in flight without starting anything (a new model or image).
    quint64 nextGeneration() { return ++generation_; }
    void supersede() { ++generation_; }

    // True when a run or load is in flight: a rerun() follows it (many deferrals, one rerun).
    bool defer();
    void start(std::shared_ptr<AttentionJob> job); // when not busy

    // On the caller's thread, after the run in flight (whose result is dropped).
    void runNow(AttentionJob& job);
    void cancel(); // the comparison in flight stops between schemes

    void load(const QString& dir);                               // loaded() or loadFailed() follows
    std::shared_ptr<AttentionModel> loadNow(const QString& dir); // blocking; its error field says what failed
    bool busy() const;                                           // until a result is handled on this thread, not just computed

Q_SIGNALS:
    void finished(std::shared_ptr<ropescope::gui::AttentionJob> job);
    void rerun();
    void loaded(std::shared_ptr<ropescope::gui::AttentionModel> model);
    void loadFailed(const QString& message);

private:
    QFutureWatcher<void>* watcher_;
    QFutureWatcher<std::shared_ptr<AttentionModel>>* loader_;
    std::shared_ptr<AttentionJob> inFlight_;
    bool loading_ = false;
    bool rerunPending_ = false;
    quint64 generation_ = 0;
};

} // namespace ropescope::gui
