// Python schemes in their worker process (issue 40): every repro of the third hostile sweep, run through the
// ropescope binary with the default 2 s limit. Each must give one line and exit 2 (or succeed where the
// scheme is harmless to the command), stop within 3 s, write no output, and leave no process behind: the
// worker and everything it forked write their pids, and each must be gone afterwards.
#include "tests/support/test_paths.h"
#include "tests/support/run_ropescope.h"
#include "tests/support/test_files.h"

#include <QDateTime>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QThread>
#include <QtTest>

namespace {

// Every scheme first records the pid of the process it runs in and when it started (the time the limit
// is measured from; the command's own start, LibTorch's libraries and all, comes before it).
QByteArray withPidRecord(const QString& dir, const QByteArray& body)
{
    return "import os as _o, time as _t\nopen(" + QByteArray("'") + dir.toUtf8() +
        "/pids', 'a').write('%d %.6f\\n' % (_o.getpid(), _t.time()))\n" + body;
}

double schemeStart(const QString& dir)
{
    const QList<QByteArray> first = contents(dir + "/pids").split('\n').value(0).split(' ');
    return first.size() == 2 ? first[1].toDouble() : 0;
}

// A pid is gone when /proc has no live process for it (a zombie waiting for init counts as gone).
bool alive(const QByteArray& pid)
{
    QFile stat("/proc/" + pid + "/stat");
    if (!stat.open(QIODevice::ReadOnly))
        return false;
    const QByteArray s = stat.readAll();
    const qsizetype close = s.lastIndexOf(')');
    return close > 0 && s.size() > close + 2 && s[close + 2] != 'Z' && s[close + 2] != 'X';
}

QStringList livePids(const QString& dir)
{
    QStringList out;
    for (const QByteArray& line : contents(dir + "/pids").split('\n'))
        if (const QByteArray pid = line.split(' ').value(0).trimmed(); !pid.isEmpty() && alive(pid))
            out << pid;
    return out;
}

} // namespace

class TestSchemeWorker : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void hostileSchemes_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("expected");
        const QByteArray ok = "def positions(layout):\n    return [float(i) for i in range(layout.tokens)]\n";
        QTest::newRow("sleep at import") << QByteArray("import time\ntime.sleep(100)\n") + ok << 2
                                         << "loading the file ran longer than 2 s and was stopped";
        QTest::newRow("sleep in positions") << QByteArray("import time\ndef positions(layout):\n    time.sleep(100)\n") << 2
                                            << "positions() ran longer than 2 s and was stopped";
        QTest::newRow("catastrophic regex") << QByteArray("import re\ndef positions(layout):\n    re.match(r'(a+)+$', 'a' * 40 + 'b')\n")
                                            << 2 << "positions() ran longer than 2 s and was stopped";
        QTest::newRow("loop catching BaseException") << QByteArray("def positions(layout):\n    while True:\n        try:\n            "
                                                                   "pass\n        except BaseException:\n            pass\n")
                                                     << 2 << "positions() ran longer than 2 s and was stopped";
        QTest::newRow("thread holding the GIL")
            << QByteArray(
                   "import re, threading\nthreading.Thread(target=lambda: re.match(r'(a+)+$', 'a' * 60 + 'b'), daemon=True).start()\n") +
                ok
            << 2 << "ran longer than 2 s and was stopped";
        QTest::newRow("ctypes segfault") << QByteArray("import ctypes\ndef positions(layout):\n    ctypes.string_at(0)\n") << 2
                                         << "the scheme's process ended (signal 11";
        QTest::newRow("runtime patched to zero components")
            << QByteArray("import numpy as np, ropescope_scheme_runtime as r\nr.call_positions = lambda *a: np.zeros((0, 17))\n") + ok << 2
            << "returned 0 components";
        QTest::newRow("os._exit(0)") << QByteArray("import os\ndef positions(layout):\n    os._exit(0)\n") << 2
                                     << "the scheme's process ended (exit code 0)";
        QTest::newRow("deep recursion")
            << QByteArray(
                   "import sys\nsys.setrecursionlimit(10**8)\ndef f(n):\n    return f(n + 1)\ndef positions(layout):\n    return f(0)\n")
            << 2 << "scheme: bad.py";
        QTest::newRow("huge list") << QByteArray("def positions(layout):\n    return [[0.0] * 10**8] * 3\n") << 2
                                   << "ran longer than 2 s and was stopped";
        QTest::newRow("huge allocation()") << QByteArray("def allocation(head_dim):\n    return [0] * 10**8\n") + ok << 2 << "allocation()";
        QTest::newRow("over the memory limit")
            << QByteArray("def positions(layout):\n    x = bytearray(3 << 30)\n    return [0.0] * layout.tokens\n") << 2 << "MemoryError";
        QTest::newRow("complex values") << QByteArray("def positions(layout):\n    return [1j] * layout.tokens\n") << 2
                                        << "positions() returned complex numbers; expected real numbers";
        QTest::newRow("strings as numbers") << QByteArray("def positions(layout):\n    return ['1'] * layout.tokens\n") << 2
                                            << "positions() returned strings; expected real numbers";
        // Harmless to the command: the fork's child is ended with the worker, the print stays out of stdout.
        QTest::newRow("fork child that sleeps")
            << QByteArray("import os, time\ndef positions(layout):\n    if os.fork() == 0:\n        open(os.path.dirname(__file__) + "
                          "'/pids', 'a').write('%d\\n' % os.getpid())\n"
                          "        time.sleep(100)\n    return [float(i) for i in range(layout.tokens)]\n")
            << 0 << "";
        QTest::newRow("print") << QByteArray("print('hello from the scheme')\ndef positions(layout):\n    print('computing')\n    return "
                                             "[float(i) for i in range(layout.tokens)]\n")
                               << 0 << "";
    }
    void hostileSchemes()
    {
        QFETCH(QByteArray, body);
        QFETCH(int, exitCode);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const QString file = writeFile(dir.filePath("bad.py"), withPidRecord(dir.path(), body));
        QElapsedTimer timer;
        timer.start();
        // No --output: the table goes to stdout, where nothing the scheme prints may land.
        const auto r = runRopescope({"positions", "--scheme", file, "--layout", "text:4,image:2x2,text:2"});
        const qint64 ms = timer.elapsed();
        const double sinceScheme = static_cast<double>(QDateTime::currentMSecsSinceEpoch()) / 1000.0 - schemeStart(dir.path());
        qInfo("%s: %.2f s after the scheme began (%lld ms in all), exit %d: %s", QTest::currentDataTag(), sinceScheme,
              static_cast<long long>(ms), r.exitCode, r.err.trimmed().constData());
        QCOMPARE(r.exitCode, exitCode);
        QVERIFY2(sinceScheme < 3.0, qPrintable(QString("ended %1 s after the scheme began").arg(sinceScheme)));
        QVERIFY2(ms < 10000, qPrintable(QString("took %1 ms").arg(ms)));
        if (exitCode == 2) {
            QVERIFY2(r.err.contains(expected.toUtf8()), r.err.constData());
            QCOMPARE(r.err.count('\n'), 1);
            QVERIFY(r.out.isEmpty());
        } else {
            QVERIFY2(r.out.startsWith("index,modality"), r.out.left(200).constData());
            QVERIFY(!r.out.contains("hello") && !r.out.contains("computing"));
        }
        QVERIFY(!contents(dir.filePath("pids")).isEmpty()); // the scheme did run (in its worker)
        QStringList left;
        for (int i = 0; i < 20 && !(left = livePids(dir.path())).isEmpty(); ++i)
            QThread::msleep(50); // SIGKILL is delivered at once; give the kernel a moment to reap
        QVERIFY2(left.isEmpty(), qPrintable("processes left behind: " + left.join(' ')));
    }

    // What a scheme prints is shown with its error, on the same one line, never on stdout.
    void printedOutputComesWithTheError()
    {
        QTemporaryDir dir;
        const QString file =
            writeFile(dir.filePath("noisy.py"), "def positions(layout):\n    print('the cause is here')\n    return 1 / 0\n");
        const auto r = runRopescope({"positions", "--scheme", file, "--layout", "text:3"});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("noisy.py:3: ZeroDivisionError") && r.err.contains("the scheme printed: the cause is here"),
                 r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(r.out.isEmpty());
    }

    // A newline in the file's name does not cut the message into two lines.
    void newlineInTheFileName()
    {
        QTemporaryDir dir;
        const QString file = writeFile(dir.filePath("two\nlines.py"), "def positions(layout):\n    return 1 / 0\n");
        const auto r = runRopescope({"positions", "--scheme", file, "--layout", "text:3"});
        QCOMPARE(r.exitCode, 2);
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY2(r.err.contains("ZeroDivisionError"), r.err.constData());
    }

    // sys.path holds neither the working folder nor the scheme's own: a module beside the scheme that shadows a
    // standard one is not imported (trust covers the scheme's bytes, not its neighbours').
    void neighboursAreNotImported()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("fractions.py"), "open(__file__ + '.ran', 'w').write('x')\n");
        const QString scheme = writeFile(
            dir.filePath("uses_fractions.py"),
            "import fractions\ndef positions(layout):\n    return [float(fractions.Fraction(i, 1)) for i in range(layout.tokens)]\n");
        QProcess p;
        p.setWorkingDirectory(dir.path()); // the working folder holds it too
        p.start(ROPESCOPE_BINARY, {"positions", "--scheme", scheme, "--layout", "text:3"});
        QVERIFY(p.waitForFinished(30000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        QVERIFY(!QFile::exists(dir.filePath("fractions.py.ran")));
    }

    // --scheme-imports: the .py files beside the scheme import (served from the bytes read with it), and the
    // sha256 sessions and outputs record covers them: a changed neighbour is a changed scheme.
    void folderImportsWhenAsked()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("helper.py"), "OFFSET = 7.0\n");
        const QString scheme =
            writeFile(dir.filePath("uses_helper.py"),
                      "import helper\ndef positions(layout):\n    return [helper.OFFSET + i for i in range(layout.tokens)]\n");
        const auto refused = runRopescope({"positions", "--scheme", scheme, "--layout", "text:2"});
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains("uses_helper.py:1: ModuleNotFoundError: No module named 'helper'"), refused.err.constData());
        const auto shaOf = [&] {
            const auto r = runRopescope({"positions", "--scheme", scheme, "--scheme-imports", "--layout", "text:2", "--format", "json"});
            const QJsonObject root = QJsonDocument::fromJson(r.out).object();
            const QJsonObject file = root["parameters"].toObject()["scheme_file"].toObject();
            return std::make_pair(root["tokens"].toArray()[1].toObject()["p"].toArray()[0].toDouble(),
                                  file["imports_folder"].toBool() ? file["sha256"].toString() : QString());
        };
        const auto [first, sha1] = shaOf();
        QCOMPARE(first, 8.0);
        QVERIFY(!sha1.isEmpty());
        writeFile(dir.filePath("helper.py"), "OFFSET = 1.0\n");
        const auto [second, sha2] = shaOf();
        QCOMPARE(second, 2.0);
        QVERIFY2(!sha2.isEmpty() && sha2 != sha1, qPrintable(sha1 + " " + sha2));
    }

    // Batch keys are flag names: "scheme=FILE.py" (or any key holding '=') is refused and nothing runs, with
    // or without the Python file being checked for trust.
    void batchKeysCannotSmuggleAFlag_data()
    {
        QTest::addColumn<QString>("type");
        QTest::addColumn<QString>("key");
        QTest::addColumn<bool>("trust");
        QTest::newRow("table scheme=") << "table"
                                       << "scheme=%1" << false;
        QTest::newRow("table scheme= trusted") << "table"
                                               << "scheme=%1" << true;
        QTest::newRow("attention schemes=") << "attention"
                                            << "schemes=mrope,%1" << false;
        QTest::newRow("ptd Scheme") << "ptd"
                                    << "Scheme" << false;
    }
    void batchKeysCannotSmuggleAFlag()
    {
        QFETCH(QString, type);
        QFETCH(QString, key);
        QFETCH(bool, trust);
        QTemporaryDir dir;
        const QString marker = dir.filePath("ran");
        const QString pwn = writeFile(dir.filePath("pwn.py"),
                                      "open(" + ("'" + marker + "'").toUtf8() +
                                          ", 'w').write('x')\n"
                                          "def positions(layout):\n    return [float(i) for i in range(layout.tokens)]\n");
        QJsonObject item{{"type", type}, {"output", type == "attention" ? "att" : "t.csv"}, {"layout", "text:4,image:2x2,text:2"}};
        item[key.contains("%1") ? key.arg(pwn) : key] = key.contains("%1") ? QJsonValue(true) : QJsonValue(pwn);
        const QString job = writeFile(dir.filePath("job.json"), QJsonDocument(QJsonObject{{"items", QJsonArray{item}}}).toJson());
        QStringList args{"batch", job, "--output", dir.filePath("out")};
        if (trust)
            args << "--trust-python";
        const auto r = runRopescope(args);
        QVERIFY2(r.exitCode != 0, r.err.constData());
        QVERIFY2(r.err.contains("bad parameter name"), r.err.constData());
        QVERIFY(!QFile::exists(marker));
        QVERIFY(!QFile::exists(dir.filePath("out/t.csv")));
    }

    // Without --trust-python a job's Python file is refused before anything runs, by whichever flag names it.
    void batchRefusesPythonWithoutTrust()
    {
        QTemporaryDir dir;
        const QString marker = dir.filePath("ran");
        const QString pwn = writeFile(dir.filePath("pwn.py"),
                                      "open(" + ("'" + marker + "'").toUtf8() +
                                          ", 'w').write('x')\n"
                                          "def positions(layout):\n    return [float(i) for i in range(layout.tokens)]\n");
        for (const QJsonObject& item : {QJsonObject{{"type", "table"}, {"output", "t.csv"}, {"layout", "text:4"}, {"scheme", pwn}},
                                        QJsonObject{{"type", "attention"}, {"output", "att"}, {"schemes", "mrope," + pwn}},
                                        // a sweep over schemes: the Python file is one of the swept values
                                        QJsonObject{{"type", "ptd"},
                                                    {"output", "p_{scheme}.json"},
                                                    {"layout", "text:4,image:2x2"},
                                                    {"sweep", QJsonObject{{"scheme", QJsonArray{"mrope", pwn}}}}},
                                        // in the job's defaults rather than the item
                                        QJsonObject{{"type", "table"}, {"output", "d.csv"}, {"layout", "text:4"}}}) {
            QJsonObject job{{"items", QJsonArray{item}}};
            if (!item.contains("scheme") && !item.contains("schemes") && !item.contains("sweep"))
                job["defaults"] = QJsonObject{{"scheme", pwn}};
            const QString jobFile = writeFile(dir.filePath("job.json"), QJsonDocument(job).toJson());
            const auto r = runRopescope({"batch", jobFile, "--output", dir.filePath("out")});
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains("--trust-python"), r.err.constData());
            QVERIFY(!QFile::exists(marker));
            QVERIFY(!QDir(dir.filePath("out")).exists());
        }
    }
};

QTEST_GUILESS_MAIN(TestSchemeWorker)
#include "test_scheme_worker.moc"
