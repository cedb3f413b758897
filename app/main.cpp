#include "cli/cli_error.h"
#include "cli/commands.h"

#include <QCoreApplication>

#include <cstdio>
#include <functional>
#include <map>

namespace {

const char* kUsage =
    "usage: ropescope <command> [options]\n"
    "\n"
    "commands:\n"
    "  positions   print the position table of a layout under a scheme (CSV or JSON)\n"
    "  ptd         print PTD (Circle-RoPE eq. 1), per-block values, crowding; --paper-table1\n"
    "  render      render the cone view to a PNG (no display needed)\n"
    "  bench       timings: bench geometry [--json]\n"
    "\n"
    "Run 'ropescope <command> --help' for its options.\n";

} // namespace

int main(int argc, char** argv)
{
    using namespace ropescope::cli;
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName("ropescope");
    QCoreApplication::setApplicationVersion("0.1.0");
    QStringList args = QCoreApplication::arguments();

    const std::map<QString, std::function<int(const QStringList&)>> commands{
        {"positions", runPositions},
        {"ptd", runPtd},
        {"bench", runBench},
        {"render", runRender},
    };

    if (args.size() < 2) {
        // The desktop explorer (issue #3) will open here; until then, show the headline result.
        std::fputs("ropescope: the desktop explorer is not built yet; showing `ropescope ptd --paper-table1`.\n\n", stderr);
        args = QStringList{args.value(0, "ropescope"), "ptd", "--paper-table1"};
    }
    const QString command = args.at(1);
    if (command == "--help" || command == "-h" || command == "help") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    const auto it = commands.find(command);
    if (it == commands.end()) {
        std::fprintf(stderr, "ropescope: unknown command '%s'\n%s", qPrintable(command), kUsage);
        return kExitUsage;
    }

    QStringList commandArgs = args.mid(2);
    commandArgs.prepend(args.at(0) + " " + command);
    try {
        return it->second(commandArgs);
    } catch (const HelpShown&) {
        return 0;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "ropescope %s: %s\n", qPrintable(command), e.what());
        return kExitUsage;
    } catch (const Failure& e) {
        std::fprintf(stderr, "ropescope %s: %s\n", qPrintable(command), e.what());
        return kExitFailure;
    } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "ropescope %s: out of memory\n", qPrintable(command));
        return kExitFailure;
    }
}
