#pragma once
#include "tests/support/test_paths.h"
#include <QProcess>
#include <QStringList>

// Runs the built ropescope binary and collects its exit code and output.
struct RopescopeRun {
    int exitCode = -1;
    QByteArray out, err;
};

inline RopescopeRun runRopescope(const QStringList& args, bool withDisplay = true)
{
    QProcess p;
    if (!withDisplay) {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove("DISPLAY");
        p.setProcessEnvironment(env);
    }
    p.start(ROPESCOPE_BINARY, args);
    if (!p.waitForFinished(300000))
        return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -2, p.readAllStandardOutput(), p.readAllStandardError()};
}
