// Session files and the autosave without a window: round trip, errors that name the file and the value,
// and an unreadable autosave set aside (never overwritten, never followed through a link).
#include "core/io/atomic_file.h"
#include "core/session/session_file.h"

#include <QtTest>

#include <sys/stat.h>

using namespace ropescope;

namespace {

void writeRaw(const QString& path, const QByteArray& bytes)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
    QCOMPARE(f.write(bytes), bytes.size());
}

QByteArray readRaw(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestSessionFile : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void roundTrips()
    {
        QTemporaryDir dir;
        session::SessionFile s;
        s.state.layout = "text:2,image:3x5,text:1";
        s.state.params.circle.alpha = 0.25;
        s.state.camera = session::CameraPreset::Side;
        s.state.projection = {session::Projection4D::Components, {0, 1, 3}};
        s.state.cameraState = session::CameraState{{4, 5, 6}, {1, 1, 1}, {0, 0, 1}, 20};
        s.state.highlighted = {5, 2, 17};
        s.attention = QJsonObject{{"question", "where is the circle?"}, {"layer", 3}};
        const QString path = dir.filePath("mine.ropescope.json");
        session::writeSessionFile(path, s);
        const session::SessionFile back = session::readSessionFile(path);
        QCOMPARE(back.state.layout, s.state.layout);
        QCOMPARE(back.state.params.circle.alpha, 0.25);
        QCOMPARE(back.state.camera, session::CameraPreset::Side);
        QVERIFY(back.state.projection == s.state.projection);
        QCOMPARE(back.state.cameraState->position, (std::array<double, 3>{4, 5, 6}));
        QCOMPARE(back.attention, s.attention);
        QCOMPARE(back.state.highlighted, (std::vector<int>{5, 2, 17}));
    }

    void errorsNameTheFileAndTheValue()
    {
        QTemporaryDir dir;
        const QString notJson = dir.filePath("half.json");
        writeRaw(notJson, "{\"layout\": \"text:4,image:8x8\", ");
        try {
            session::readSessionFile(notJson);
            QFAIL("accepted half a file");
        } catch (const session::SessionFileError& e) {
            QCOMPARE(e.path, notJson);
            QVERIFY2(QString(e.what()).startsWith(notJson + ": not a session file"), e.what());
        }
        const QString badValue = dir.filePath("alpha.json");
        writeRaw(badValue, R"({"layout": "text:2,image:2x2", "scheme": "circle", "alpha": 7})");
        try {
            session::readSessionFile(badValue);
            QFAIL("accepted alpha 7");
        } catch (const session::SessionFileError& e) {
            QCOMPARE(e.parameter, std::string("alpha")); // the GUI names its control from this
            QVERIFY2(QString(e.what()).startsWith(badValue + ": alpha: must be in [0, 1]"), e.what());
            QVERIFY2(!QString::fromStdString(e.detail).contains("alpha"), e.what());
        }
        for (const char* marks : {R"("highlighted": [1, -2])", R"("highlighted": [1.5])", R"("highlighted": "3")"}) {
            writeRaw(badValue, QByteArray(R"({"layout": "text:2,image:2x2", )") + marks + "}");
            try {
                session::readSessionFile(badValue);
                QFAIL(marks);
            } catch (const session::SessionFileError& e) {
                QVERIFY2(QString(e.what()).contains("'highlighted'"), e.what()); // named like the other session keys
            }
        }
        // A FIFO is refused at once instead of blocking the reader; so is a folder.
        const QString fifo = dir.filePath("pipe.json");
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        QVERIFY_THROWS_EXCEPTION(session::SessionFileError, session::readSessionFile(fifo));
        QVERIFY_THROWS_EXCEPTION(session::SessionFileError, session::readSessionFile(dir.path()));
        // An image that is not a regular file is dropped, the rest of the session kept.
        const QString withImage = dir.filePath("image.json");
        writeRaw(withImage, QJsonDocument(QJsonObject{{"layout", "text:1,image:2x2"}, {"image", fifo}}).toJson());
        const session::SessionFile s = session::readSessionFile(withImage);
        QVERIFY(s.state.imagePath.isEmpty());
        QCOMPARE(QString::fromStdString(s.state.layout), QString("text:1,image:2x2"));
    }

    void autosaveRestoresWhatItWrote()
    {
        QTemporaryDir dir;
        session::Autosave none(dir.filePath("sub/folder"));
        const session::Autosave::Restored empty = none.restore();
        QVERIFY(!empty.session && empty.problem.isEmpty());
        session::SessionFile s;
        s.state.layout = "text:9,image:4x4";
        none.write(s); // creates the folder
        session::Autosave again(dir.filePath("sub/folder"));
        const session::Autosave::Restored r = again.restore();
        QVERIFY(r.session);
        QCOMPARE(QString::fromStdString(r.session->state.layout), QString("text:9,image:4x4"));
    }

    void unreadableAutosaveIsSetAsideNotLost()
    {
        QTemporaryDir dir;
        session::Autosave autosave(dir.path());
        const QByteArray broken = "{\"layout\": ";
        writeRaw(autosave.path(), broken);
        const session::Autosave::Restored first = autosave.restore();
        QVERIFY(!first.session);
        QVERIFY2(first.problem.contains("not a session file") && first.problem.contains("kept as"), qPrintable(first.problem));
        QVERIFY(autosave.enabled());
        QVERIFY(!QFileInfo::exists(autosave.path()));
        const QStringList aside = QDir(dir.path()).entryList({"autosave.ropescope.json.corrupt-*"});
        QCOMPARE(aside.size(), 1);
        QCOMPARE(readRaw(dir.filePath(aside.first())), broken);
        // A second failure within the same second gets its own name; the first is not replaced.
        writeRaw(autosave.path(), "[]");
        autosave.restore();
        QCOMPARE(QDir(dir.path()).entryList({"autosave.ropescope.json.corrupt-*"}).size(), 2);
        QCOMPARE(readRaw(dir.filePath(aside.first())), broken);
    }

    void autosaveNeverWritesThroughALink()
    {
        QTemporaryDir dir, elsewhere;
        const QString target = elsewhere.filePath("precious.txt");
        writeRaw(target, "keep me");
        session::Autosave autosave(dir.path());
        QVERIFY(QFile::link(target, autosave.path()));
        // Not a session: the link itself is moved aside, its target untouched.
        QVERIFY(!autosave.restore().session);
        QCOMPARE(readRaw(target), QByteArray("keep me"));
        const QStringList aside = QDir(dir.path()).entryList({"autosave.ropescope.json.corrupt-*"}, QDir::System | QDir::Files);
        QCOMPARE(aside.size(), 1);
        QVERIFY(QFileInfo(dir.filePath(aside.first())).isSymLink());
        // A link planted later is refused on writing, not followed.
        QVERIFY(QFile::link(target, autosave.path()));
        QVERIFY_THROWS_EXCEPTION(io::IoError, autosave.write(session::SessionFile{}));
        QCOMPARE(readRaw(target), QByteArray("keep me"));
    }
};

QTEST_APPLESS_MAIN(TestSessionFile)
#include "test_session_file.moc"
