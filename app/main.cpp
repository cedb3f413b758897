#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/output.h"
#include "core/model/analysis/position_check.h"
#include "core/model/engine/host_allocator.h"

#include <QCoreApplication>
#include <QGuiApplication>

#ifdef ROPESCOPE_WITH_GUI
#include "app/gui/gui_main.h"
#endif

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>
#include <memory>
#include <string>

namespace {

// Every command, once: its name, what it does (the usage text), whether it draws (fonts: a QGuiApplication on
// Qt's offscreen platform, never a display), and its entry point.
struct Command {
    const char* name;
    const char* summary;
    bool draws;
    int (*run)(const QStringList&);
};

const Command kCommands[] = {
    {"positions", "print the position table of a layout under a scheme (CSV or JSON)", false, ropescope::cli::runPositions},
    {"ptd", "print PTD (Circle-RoPE eq. 1), per-block values, crowding; --paper-table1", false, ropescope::cli::runPtd},
    {"freqs", "which axis drives each rotary frequency, what each resolves in the grids, prior decay", true, ropescope::cli::runFreqs},
    {"render", "render the cone view to a PNG (no display needed)", true, ropescope::cli::runRender},
    {"batch", "run a JSON job of figures, tables and sweeps (no display needed)", true, ropescope::cli::runBatch},
    {"forward", "run a checkpoint of a supported family (%families%) on given tensors under any scheme", false, ropescope::cli::runForward},
    {"attend", "answer a question about an image and map text->image attention under any scheme", true, ropescope::cli::runAttend},
    {"train", "train a tiny Qwen2-VL on the synthetic shapes task under a scheme", true, ropescope::cli::runTrain},
    {"eval", "accuracy per question type and grounding per layer on held-out samples", true, ropescope::cli::runEval},
    {"bias", "text->image attention averaged over many samples, per scheme and layer (--shard, --merge)", true, ropescope::cli::runBias},
    {"export-scheme", "write a built-in scheme with its parameters as a Python scheme file (numpy only)", false,
     ropescope::cli::runExportScheme},
    {"check-positions", "check a training pipeline's position ids (a dump of its batches) against the model family's rule", true,
     ropescope::cli::runCheckPositions},
    {"tokenize", "encode text with a model's tokenizer.json (JSON arrays of ids)", false, ropescope::cli::runTokenize},
    {"bench", "timings: bench geometry | live | model | attention | bias [--json]", true, ropescope::cli::runBench},
};

const Command* findCommand(const QString& name)
{
    for (const Command& c : kCommands)
        if (name == c.name)
            return &c;
    return nullptr;
}

std::string usage()
{
    // Names padded to the longest and two spaces: "check-positions" (15 characters) ran into its text.
    int width = 0;
    for (const Command& c : kCommands)
        width = std::max(width, static_cast<int>(std::strlen(c.name)));
    std::string text = "usage: ropescope <command> [options]\n\ncommands:\n";
    for (const Command& c : kCommands) {
        // The families are named where the rules for them live (core/model/analysis/position_check), not here.
        const QString summary = QString(c.summary).replace("%families%", ropescope::model::engineFamilyNames());
        text += "  " + QByteArray(c.name).leftJustified(width + 2).toStdString() + summary.toStdString() + "\n";
    }
    return text + "\nRun 'ropescope <command> --help' for its options, 'ropescope --version' for the version.\n";
}

// Errors are one line: the first line of a multi-line message (LibTorch appends a backtrace), control
// characters escaped so a hostile file name cannot rewrite the terminal.
std::string oneLine(const char* message)
{
    const std::string text(message);
    return ropescope::cli::terminalSafe(text.substr(0, text.find('\n')));
}

// Commands report failures in one line of their own; Qt's and libpng's warnings (an sRGB profile, a
// font) would make that two or three. They are shown with ROPESCOPE_QT_WARNINGS=1.
void quietQtWarnings(QtMsgType type, const QMessageLogContext&, const QString& message)
{
    if (type == QtCriticalMsg || type == QtFatalMsg)
        std::fprintf(stderr, "%s\n", oneLine(message.toLocal8Bit().constData()).c_str());
}

} // namespace

int main(int argc, char** argv)
{
    using namespace ropescope::cli;
    ropescope::model::reuseLargeHostAllocations(); // before any weights are allocated
    // Qt warns on every start when XDG_RUNTIME_DIR is unset (containers, CI): give it a private one.
    if (qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) {
        const QByteArray dir = QByteArray("/tmp/ropescope-runtime-") + QByteArray::number(static_cast<qlonglong>(getuid()));
        if (::mkdir(dir.constData(), 0700) == 0 || errno == EEXIST)
            qputenv("XDG_RUNTIME_DIR", dir);
    }
    if (argc < 2) {
#ifdef ROPESCOPE_WITH_GUI
        return ropescope::gui::runGui(argc, argv);
#else
        std::fputs("ropescope: built without the GUI (ROPESCOPE_GUI=OFF); see 'ropescope --help'\n", stderr);
        return kExitUsage;
#endif
    }
    if (!qEnvironmentVariableIsSet("ROPESCOPE_QT_WARNINGS"))
        qInstallMessageHandler(quietQtWarnings);
    // Figures need fonts (a QGuiApplication) but never a display: Qt's offscreen platform, EGL for VTK.
    const Command* chosen = findCommand(QString::fromLocal8Bit(argv[1]));
    std::unique_ptr<QCoreApplication> app;
    if (chosen && chosen->draws) {
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
        app = std::make_unique<QGuiApplication>(argc, argv);
    } else {
        app = std::make_unique<QCoreApplication>(argc, argv);
    }
    QCoreApplication::setApplicationName("ropescope");
    QCoreApplication::setApplicationVersion(ROPESCOPE_VERSION);
    const QStringList args = QCoreApplication::arguments();

    const QString command = args.at(1);
    if (command == "--help" || command == "-h" || command == "help") {
        std::fputs(usage().c_str(), stdout);
        return 0;
    }
    if (command == "--version" || command == "-v" || command == "version") {
        std::printf("ropescope %s\n", qPrintable(QCoreApplication::applicationVersion()));
        return 0;
    }
    if (!chosen) {
        std::fprintf(stderr, "ropescope: unknown command '%s'\n%s", qPrintable(command), usage().c_str());
        return kExitUsage;
    }

    QStringList commandArgs = args.mid(2);
    commandArgs.prepend(args.at(0) + " " + command);
    try {
        return chosen->run(commandArgs);
    } catch (const HelpShown&) {
        return 0;
    } catch (const UsageError& e) { // the commands' own words, whole: a path in them may hold a newline (shown as \x0a)
        std::fprintf(stderr, "ropescope %s: %s\n", qPrintable(command), terminalSafe(e.what()).c_str());
        return kExitUsage;
    } catch (const Failure& e) {
        std::fprintf(stderr, "ropescope %s: %s\n", qPrintable(command), terminalSafe(e.what()).c_str());
        return kExitFailure;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr,
                     "ropescope %s: out of memory: the input is too large for this machine (use a smaller layout, image or prompt)\n",
                     qPrintable(command));
        return kExitFailure;
    } catch (const std::exception& e) { // LibTorch's c10::Error among them: a fault no command turned into words
        std::fprintf(stderr, "ropescope %s: %s\n", qPrintable(command), oneLine(e.what()).c_str());
        return kExitFailure;
    } catch (...) {
        std::fprintf(stderr, "ropescope %s: unexpected internal error\n", qPrintable(command));
        return kExitFailure;
    }
}
