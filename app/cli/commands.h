#pragma once
#include <QStringList>

namespace ropescope::cli {

// Each takes the arguments after the subcommand name (program name first, for QCommandLineParser),
// returns the exit code, and throws UsageError / Failure with a one-line message.
int runPositions(const QStringList& args);
int runPtd(const QStringList& args);
int runFreqs(const QStringList& args);
int runBench(const QStringList& args);
int runRender(const QStringList& args);
int runBatch(const QStringList& args);
int runForward(const QStringList& args);
int runTokenize(const QStringList& args);
int runAttend(const QStringList& args);
int runTrain(const QStringList& args);
int runEval(const QStringList& args);
int runBias(const QStringList& args);
int runExportScheme(const QStringList& args);
int runCheckPositions(const QStringList& args);

} // namespace ropescope::cli
