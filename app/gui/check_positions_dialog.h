#pragma once
// File > Check position ids...: `ropescope check-positions` in the window. A dump (file or folder) and the
// family's rule (a family, or a model folder's config.json) are checked on a worker with progress and cancel;
// the differing samples are listed as the CLI lists them; a selected sample shows the pipeline's positions
// beside the rule's (the CLI's figure), and opens in the explorer as a position table.
#include <QDialog>
#include <QString>

#include <memory>

class QComboBox;
class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;
class QTableWidget;
class QVBoxLayout;

namespace ropescope::views {
class ChartView;
}

namespace ropescope::gui {

class CheckPositionsDialog : public QDialog {
    Q_OBJECT
public:
    explicit CheckPositionsDialog(QWidget* parent = nullptr);
    ~CheckPositionsDialog() override;

    // For tests and for a dump named elsewhere: the dump, and the rule (a family name, or a model folder).
    void setDump(const QString& path);
    void setRule(const QString& familyOrModelDir);
    void start(); // on a worker; emits finished
    bool busy() const;
    int differingCount() const; // rows of the table
    QString summary() const;    // the status line
    void selectSample(int row); // shows its figure
    // Writes the selected sample's pipeline positions as a position table (CSV) and returns its path; throws
    // std::runtime_error when none is selected or it cannot be written.
    QString writeSelectedTable(const QString& folder) const;

Q_SIGNALS:
    void finished();
    void openPositionTable(const QString& path); // "Open in the explorer"

private:
    void addTableAndFigure(QVBoxLayout* root);
    void showResult(); // the worker's check, when it finishes
    struct Private;
    std::unique_ptr<Private> d;
    QLineEdit* dump_ = nullptr;
    QComboBox* family_ = nullptr;
    QLineEdit* model_ = nullptr;
    QPushButton* check_ = nullptr;
    QPushButton* cancel_ = nullptr;
    QPushButton* open_ = nullptr;
    QProgressBar* progress_ = nullptr;
    QLabel* status_ = nullptr;
    QTableWidget* table_ = nullptr;
    views::ChartView* figure_ = nullptr;
};

} // namespace ropescope::gui
