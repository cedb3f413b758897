// The output writer and the input reader against hostile file-system objects: FIFOs, device nodes and
// symbolic links made privately in a temporary folder (never on /dev), leftovers of a killed writer.
#include "core/io/atomic_file.h"
#include "core/io/input_file.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <cerrno>
#include <csignal>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

using namespace ropescope::io;

namespace {

QByteArray contents(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<unreadable>");
}

mode_t fileType(const QString& path)
{
    struct stat st { };
    return ::lstat(QFile::encodeName(path).constData(), &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

void writeText(const QString& path, const QByteArray& text)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(text);
}

// A process id that no process has now.
pid_t deadPid()
{
    for (pid_t pid = 4000000; pid > 1000; --pid)
        if (::kill(pid, 0) != 0 && errno == ESRCH)
            return pid;
    return 0;
}

} // namespace

class TestOutputFiles : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // First: the writer scans each folder once per process, and a later test's folder may reuse the
    // inode of an earlier one.
    void leftoversOfAKilledWriterAreRemoved()
    {
        QTemporaryDir dir;
        const pid_t dead = deadPid();
        QVERIFY(dead > 0);
        const QString leftover = dir.filePath(QString(".ropescope-tmp-%1-0-big.safetensors").arg(dead));
        const QString live = dir.filePath(QString(".ropescope-tmp-%1-0-running.png").arg(::getppid()));
        const QString foreign = dir.filePath(".ropescope-tmp-notapid");
        writeText(leftover, QByteArray(1 << 16, 'x'));
        writeText(live, "a writer that is still running");
        writeText(foreign, "not ours");
        writeFileAtomically(dir.filePath("new.csv"), "x");
        QVERIFY(!QFile::exists(leftover));
        QVERIFY(QFile::exists(live));
        QVERIFY(QFile::exists(foreign));
    }

    void writesNewAndReplacesRegularFiles()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath("a.csv");
        writeFileAtomically(path, "one");
        QCOMPARE(contents(path), QByteArray("one"));
        QCOMPARE(::chmod(QFile::encodeName(path).constData(), 0604), 0);
        writeFileAtomically(path, "two");
        QCOMPARE(contents(path), QByteArray("two"));
        struct stat st { };
        QVERIFY(::stat(QFile::encodeName(path).constData(), &st) == 0);
        QCOMPARE(st.st_mode & 0777, 0604u);                                         // the replaced file's mode is kept
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size(), 1); // no temporary left
    }

    void refusesFifosDevicesAndLinks()
    {
        QTemporaryDir dir;
        const QString fifo = dir.filePath("fifo");
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        QVERIFY_THROWS_EXCEPTION(IoError, writeFileAtomically(fifo, "x"));
        QCOMPARE(fileType(fifo), static_cast<mode_t>(S_IFIFO));
        try {
            writeFileAtomically(fifo, "x");
        } catch (const IoError& e) {
            QVERIFY2(QString(e.what()).contains("not a regular file"), e.what());
            QVERIFY(QString(e.what()).startsWith(fifo));
        }

        // A character device like /dev/null (1,3), made privately; needs CAP_MKNOD (CI runs as root).
        const QString device = dir.filePath("null");
        if (::mknod(QFile::encodeName(device).constData(), S_IFCHR | 0600, makedev(1, 3)) == 0) {
            QVERIFY_THROWS_EXCEPTION(IoError, writeFileAtomically(device, "x"));
            QCOMPARE(fileType(device), static_cast<mode_t>(S_IFCHR));
        } else {
            qInfo("mknod not permitted here: the device case is covered by the FIFO case only");
        }

        const QString target = dir.filePath("target.txt");
        writeText(target, "kept");
        const QString link = dir.filePath("link.txt");
        QVERIFY(QFile::link(target, link));
        QVERIFY_THROWS_EXCEPTION(IoError, writeFileAtomically(link, "x"));
        QCOMPARE(contents(target), QByteArray("kept"));
        QCOMPARE(fileType(link), static_cast<mode_t>(S_IFLNK));

        QVERIFY(QDir(dir.path()).mkdir("sub"));
        QVERIFY_THROWS_EXCEPTION(IoError, writeFileAtomically(dir.filePath("sub"), "x"));
        QCOMPARE(QDir(dir.path()).entryList({".ropescope-tmp-*"}, QDir::Files | QDir::Hidden).size(), 0);
    }

    void outputsNeverLeaveTheirFolder()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("out"), outside = dir.filePath("outside");
        QVERIFY(QDir().mkpath(out) && QDir().mkpath(outside));
        writeText(QDir(outside).filePath("t.json"), "kept");
        QVERIFY(QFile::link(outside, QDir(out).filePath("link")));
        QVERIFY(QFile::link(QDir(outside).filePath("t.json"), QDir(out).filePath("file.json")));

        for (const char* relative : {"link/pwn.json", "file.json", "link/sub/deep.json", "../x.json", "a/../../x.json", "/tmp/x"})
            QVERIFY_THROWS_EXCEPTION(IoError, writeFileInside(out, relative, "x"));
        QCOMPARE(QDir(outside).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{"t.json"});
        QCOMPARE(contents(QDir(outside).filePath("t.json")), QByteArray("kept"));
        QVERIFY(!QFile::exists(dir.filePath("x.json")));
        try {
            writeFileInside(out, "link/pwn.json", "x");
        } catch (const IoError& e) {
            QVERIFY2(QString(e.what()).contains("out/link: is a symbolic link"), e.what());
        }

        writeFileInside(out, "charts/deep/ok.json", "fine");
        QCOMPARE(contents(QDir(out).filePath("charts/deep/ok.json")), QByteArray("fine"));
    }

    void stagedFilesAppearTogetherOrNotAtAll()
    {
        QTemporaryDir dir;
        writeText(dir.filePath("a.txt"), "old a");
        writeText(dir.filePath("stale.png"), "earlier run");
        QCOMPARE(::mkfifo(QFile::encodeName(dir.filePath("c.txt")).constData(), 0600), 0);
        {
            StagedFiles files(dir.path());
            files.stage("a.txt", "new a");
            files.stage("b.txt", "new b");
            QVERIFY_THROWS_EXCEPTION(IoError, files.stage("c.txt", "new c"));
        } // never committed
        QCOMPARE(contents(dir.filePath("a.txt")), QByteArray("old a"));
        QVERIFY(!QFile::exists(dir.filePath("b.txt")));
        QCOMPARE(QDir(dir.path()).entryList({".ropescope-tmp-*"}, QDir::Files | QDir::Hidden).size(), 0);

        StagedFiles files(dir.path());
        files.stage("a.txt", "new a");
        files.stage("b.txt", "new b");
        files.removeStale("stale.png");
        files.removeStale("c.txt"); // a FIFO is not an output of ours: left alone
        files.commit();
        QCOMPARE(contents(dir.filePath("a.txt")), QByteArray("new a"));
        QCOMPARE(contents(dir.filePath("b.txt")), QByteArray("new b"));
        QVERIFY(!QFile::exists(dir.filePath("stale.png")));
        QCOMPARE(fileType(dir.filePath("c.txt")), static_cast<mode_t>(S_IFIFO));
    }

    void inputsMustBeRegularFiles()
    {
        QTemporaryDir dir;
        const QString fifo = dir.filePath("job.json");
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        QVERIFY_THROWS_EXCEPTION(IoError, readInputFile(fifo, 1 << 20, "job file")); // returns at once
        QVERIFY_THROWS_EXCEPTION(IoError, requireRegularFile(fifo, "image"));
        QVERIFY_THROWS_EXCEPTION(IoError, readInputFile(dir.path(), 1 << 20, "job file"));
        try {
            readInputFile(fifo, 1 << 20, "job file");
        } catch (const IoError& e) {
            QCOMPARE(QString(e.what()), fifo + ": the job file is not a regular file");
        }
        const QString big = dir.filePath("big.json");
        writeText(big, QByteArray((1 << 20) + 1, ' '));
        QVERIFY_THROWS_EXCEPTION(IoError, readInputFile(big, 1 << 20, "job file"));
        writeText(big, "{}");
        QCOMPARE(readInputFile(big, 1 << 20, "job file"), QByteArray("{}"));
    }
};

QTEST_GUILESS_MAIN(TestOutputFiles)
#include "test_output_files.moc"
