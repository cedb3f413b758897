#pragma once
// The Attention tab's Bias view: `ropescope bias` on the tab's model, over N samples of the bundled task, a
// question set, a folder of images or a folder of videos (the CLI's sources), on a worker with progress and cancel; the mean map per scheme and layer with the profiles (the same
// figure as the CLI's), a table of the summaries, and an export of every file the CLI writes.
#include <QString>
#include <QWidget>

#include <memory>

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableWidget;
class QVBoxLayout;

namespace ropescope::views {
class ChartView;
}

namespace ropescope::model {
struct BiasAccumulation;
}

namespace ropescope::gui {

class BiasView : public QWidget {
    Q_OBJECT
public:
    explicit BiasView(QWidget* parent = nullptr);
    ~BiasView() override;

    void setModel(const QString& dir); // the model to measure (the Attention tab's); drops a shown result
    void setSamples(int samples);
    // Where the samples come from: the bundled task (N samples), or a question set / image folder / video folder
    // at `path`, asked `question` (folders only), as `ropescope bias --questions / --images / --videos`.
    enum class Source { BundledTask = 0, QuestionSet, ImageFolder, VideoFolder };
    void setSource(Source source, const QString& path = {}, const QString& question = {});
    void setSchemes(const QString& schemes); // scheme names besides the model's own, comma-separated
    void start();                            // on a worker; emits finished
    void cancel();
    bool busy() const;
    const model::BiasAccumulation* result() const; // the last finished measurement, or null
    QString error() const;                         // the last run's, shown in the view
    // Shows a result on disk: a folder `ropescope bias` wrote (bias_state.json), or a `bias --slurm` run (its
    // merged result, merged here when every shard is done, else where its shards stand). Errors go to the status.
    void openResult(const QString& folder);
    // Writes the CLI's files into `folder`; throws std::runtime_error naming the file.
    void exportTo(const QString& folder) const;

Q_SIGNALS:
    void finished();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override; // the figure's scroll area resized: the figure follows

private:
    // The constructor's parts: the inputs' rows, the result below them, and their connections.
    void addInputRows(QVBoxLayout* root);
    void addResultArea(QVBoxLayout* root);
    void connectControls();
    void fitFigure();
    QSize figureSize_;                                                // the shown figure's own size (its aspect), empty without one
    void showResult(std::shared_ptr<model::BiasAccumulation> result); // not show(): that is QWidget's
    void clearFigure();
    struct Private;
    std::unique_ptr<Private> d;
    void updateSourceControls();
    QComboBox* source_ = nullptr;
    QLineEdit* path_ = nullptr;
    QPushButton* browse_ = nullptr;
    QLineEdit* question_ = nullptr;
    QSpinBox* samples_ = nullptr;
    QLabel* samplesLabel_ = nullptr;
    QLineEdit* schemes_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QPushButton* export_ = nullptr;
    QPushButton* open_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
    views::ChartView* figure_ = nullptr;
    QTableWidget* table_ = nullptr;
};

} // namespace ropescope::gui
