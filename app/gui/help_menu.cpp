#include "app/gui/help_menu.h"

#include "core/io/resource_paths.h"

#include <torch/version.h> // macros only: the LibTorch version RopeScope was built against
#include <vtkVersion.h>

#include <QAction>
#include <QCoreApplication>
#include <QDesktopServices>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QHeaderView>
#include <QMainWindow>
#include <QMenuBar>
#include <QMessageBox>
#include <QTableWidget>
#include <QUrl>
#include <QVBoxLayout>

#include <map>

namespace ropescope::gui {
namespace {

// The documentation: README.md beside docs/, found from the resources folder (installed or source tree).
QString documentationPath()
{
    const QDir top(QFileInfo(io::resourceDir()).absolutePath());
    for (const QString& candidate : {top.filePath("docs/GUI.md"), top.filePath("README.md")})
        if (QFileInfo(candidate).isFile())
            return candidate;
    return {};
}

void showShortcuts(QMainWindow* window)
{
    // Every action with a key, by its menu text: what the window really binds, not a list kept by hand.
    std::map<QString, QString> rows;
    for (QAction* a : window->findChildren<QAction*>()) {
        if (a->shortcuts().isEmpty() || a->text().isEmpty())
            continue;
        QStringList keys;
        for (const QKeySequence& k : a->shortcuts())
            keys << k.toString(QKeySequence::NativeText);
        const QString name = a->property("shortcutName").toString(); // Undo and Redo: not "Undo Change layout"
        rows[name.isEmpty() ? QString(a->text()).remove('&') : name] = keys.join(", ");
    }
    QDialog dialog(window);
    dialog.setWindowTitle("Keyboard shortcuts");
    auto* table = new QTableWidget(static_cast<int>(rows.size()), 2, &dialog);
    table->setObjectName("shortcutsTable");
    table->setHorizontalHeaderLabels({"Action", "Keys"});
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    int r = 0;
    for (const auto& [name, keys] : rows) {
        table->setItem(r, 0, new QTableWidgetItem(name));
        table->setItem(r++, 1, new QTableWidgetItem(keys));
    }
    table->resizeColumnsToContents();
    table->horizontalHeader()->setStretchLastSection(true);
    auto* layout = new QVBoxLayout(&dialog);
    layout->addWidget(table);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    QObject::connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
    layout->addWidget(buttons);
    dialog.resize(520, 480);
    dialog.exec();
}

} // namespace

void addHelpMenu(QMainWindow* window)
{
    QMenu* help = window->menuBar()->addMenu("&Help");
    help->addAction("&Keyboard shortcuts", window, [window] { showShortcuts(window); });
    QAction* docs = help->addAction("&Documentation", window, [window] {
        const QString path = documentationPath();
        if (path.isEmpty() || !QDesktopServices::openUrl(QUrl::fromLocalFile(path)))
            QMessageBox::information(
                window, "Documentation",
                path.isEmpty()
                    ? QString("The docs folder is not installed beside RopeScope's resources.")
                    : QString("No application opens Markdown here; the documentation is in\n%1").arg(QFileInfo(path).absolutePath()));
    });
    docs->setShortcut(QKeySequence::HelpContents);
    help->addAction("&About RopeScope", window, [window] {
        QMessageBox::about(window, "About RopeScope",
                           QString("<b>RopeScope %1</b><p>Rotary position encodings for vision-language models: where each scheme puts "
                                   "text and image tokens, the cross-modal bias it creates, and what a real VLM attends to.</p>"
                                   "<p>Qt %2 &middot; VTK %3 &middot; LibTorch %4</p>")
                               .arg(ROPESCOPE_VERSION, qVersion(), vtkVersion::GetVTKVersion(), TORCH_VERSION));
    });
}

} // namespace ropescope::gui
