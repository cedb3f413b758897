// The CLI and batch against hostile inputs (issue "Hostile inputs"): outputs into FIFOs and device nodes,
// batch outputs through symbolic links, flags that would end a batch, outputs two items share, FIFO inputs,
// out-of-range config values. FIFOs, device nodes and links are made privately in a temporary folder.
#include "tests/support/test_paths.h"
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QImage>
#include <QPainter>
#include <QTemporaryDir>
#include <QtEndian>
#include <QElapsedTimer>
#include <QtTest>

#include "tests/support/run_ropescope.h"
#include "tests/support/test_files.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

namespace {

QJsonObject manifestOf(const QString& out)
{
    return QJsonDocument::fromJson(contents(QDir(out).filePath("manifest.json"))).object();
}

bool oneLine(const QByteArray& err)
{
    return !err.trimmed().isEmpty() && !err.trimmed().contains('\n');
}

QString bundled(const QString& relative)
{
    return QString(ROPESCOPE_TEST_DATA) + "/../../resources/" + relative;
}

// A safetensors file of one [1, count] tensor `name` whose bytes are `data`.
QByteArray safetensorsOf(const QByteArray& name, const QByteArray& dtype, qint64 count, const QByteArray& data)
{
    const QByteArray header = "{\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":[1," + QByteArray::number(count) +
        "],\"data_offsets\":[0," + QByteArray::number(data.size()) + "]}}";
    QByteArray out(8, '\0');
    qToLittleEndian<quint64>(static_cast<quint64>(header.size()), out.data());
    return out + header + data;
}

// A copy of the bundled mrope model whose files can be changed.
QString modelCopy(const QTemporaryDir& dir)
{
    const QString copy = dir.filePath("model");
    QDir().mkpath(copy);
    for (const QString& name : QDir(bundled("models/mrope")).entryList(QDir::Files))
        QFile::copy(QDir(bundled("models/mrope")).filePath(name), QDir(copy).filePath(name));
    return copy;
}

} // namespace

class TestHostileCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void outputIntoAFifoOrDeviceIsRefused()
    {
        QTemporaryDir dir;
        const QString fifo = dir.filePath("fifo");
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        RopescopeRun r = runRopescope({"positions", "--scheme", "circle", "--layout", "text:3", "--output", fifo});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("not a regular file") && oneLine(r.err), r.err.constData());
        QVERIFY(QFileInfo(fifo).exists() && !QFileInfo(fifo).isFile());

        const QString device = dir.filePath("null");
        if (::mknod(QFile::encodeName(device).constData(), S_IFCHR | 0600, makedev(1, 3)) != 0)
            QSKIP("mknod not permitted here (the FIFO case above ran)");
        r = runRopescope({"positions", "--scheme", "circle", "--layout", "text:3", "--output", device});
        QCOMPARE(r.exitCode, 1);
        struct stat st { };
        QVERIFY(::lstat(QFile::encodeName(device).constData(), &st) == 0 && S_ISCHR(st.st_mode));
    }

    void batchOutputsStayInsideTheOutputFolder()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("out"), outside = dir.filePath("outside");
        QVERIFY(QDir().mkpath(out) && QDir().mkpath(outside));
        writeFile(QDir(outside).filePath("t.json"), "kept");
        QVERIFY(QFile::link(outside, QDir(out).filePath("link")));
        QVERIFY(QFile::link(QDir(outside).filePath("t.json"), QDir(out).filePath("file.json")));
        const QString job = writeFile(dir.filePath("job.json"), R"({"defaults": {"scheme": "hard", "layout": "text:2,image:2x2"},
            "items": [{"type": "ptd", "output": "link/pwn.json"}, {"type": "ptd", "output": "file.json"},
                      {"type": "ptd", "output": "link/sub/deep.json"}, {"type": "ptd", "output": "inside/ok.json"}]})");
        const RopescopeRun r = runRopescope({"batch", job, "--output", out}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("out/link: is a symbolic link"), r.err.constData());
        QVERIFY(r.err.contains("file.json: is a symbolic link"));
        QCOMPARE(QDir(outside).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden), QStringList{"t.json"});
        QCOMPARE(contents(QDir(outside).filePath("t.json")), QByteArray("kept"));
        QVERIFY(QFile::exists(QDir(out).filePath("inside/ok.json")));
        const QJsonObject manifest = manifestOf(out);
        QCOMPARE(manifest["written"].toInt(), 1);
        QCOMPARE(manifest["failed"].toInt(), 3);
        QCOMPARE(manifest["complete"].toBool(), true);
    }

    void helpKeysAreItemErrors()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("out");
        const QString job = writeFile(dir.filePath("job.json"), R"({"defaults": {"scheme": "hard", "layout": "text:2,image:2x2"},
            "items": [{"type": "ptd", "output": "a.json", "help": true}, {"type": "ptd", "output": "b.json", "h": true},
                      {"type": "table", "output": "c.csv", "version": true}, {"type": "ptd", "output": "d.json"}]})");
        const RopescopeRun r = runRopescope({"batch", job, "--output", out}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("item 1: 'help' is not an item parameter"), r.err.constData());
        QVERIFY(!r.out.contains("Usage:"));
        QVERIFY(QFile::exists(QDir(out).filePath("d.json")));
        QCOMPARE(manifestOf(out)["failed"].toInt(), 3);
    }

    void controlCharactersAreItemErrors()
    {
        // A NUL or newline in a job's strings would cut or split the one-line error naming the item.
        QTemporaryDir dir;
        const QString out = dir.filePath("out");
        const QString job = writeFile(dir.filePath("job.json"), R"({"defaults": {"scheme": "hard"},
            "items": [{"type": "ptd", "output": "a.json", "layout": "text:2\u0000,image:2x2"},
                      {"type": "ptd", "output": "b\n.json", "layout": "text:2,image:2x2"},
                      {"type": "ptd", "output": "c.json", "layout": "text:2,image:2x2"}]})");
        const RopescopeRun r = runRopescope({"batch", job, "--output", out}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("item 1: parameter 'layout' contains a control character\n"), r.err.constData());
        QVERIFY(r.err.contains("item 2: output 'b?.json' contains a control character\n"));
        QCOMPARE(r.err.count('\n'), 2);
        QVERIFY(QFile::exists(QDir(out).filePath("c.json")));
    }

    void outputsTwoItemsShareAreErrors()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("out");
        // alpha 0.5 and "0.5" format to one name; manifest.json is the batch's own; the second a.json repeats.
        const QString job = writeFile(dir.filePath("job.json"), R"({"defaults": {"scheme": "circle", "layout": "text:2,image:2x2"},
            "items": [{"type": "ptd", "output": "a.json"}, {"type": "ptd", "output": "./a.json", "alpha": 0.2},
                      {"type": "ptd", "output": "manifest.json"},
                      {"type": "ptd", "output": "s_{alpha}.json", "sweep": {"alpha": [0.5, "0.5"]}}]})");
        const RopescopeRun r = runRopescope({"batch", job, "--output", out}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("item 2: output 'a.json' is also written by an earlier item"), r.err.constData());
        QVERIFY(r.err.contains("item 3: output 'manifest.json' is the batch's manifest"));
        QVERIFY(r.err.contains("item 4: output 's_0.5.json' is also written"));
        const QJsonObject manifest = manifestOf(out);
        QCOMPARE(manifest["written"].toInt(), 2);
        QCOMPARE(manifest["items"].toArray().size(), 5);
        // a.json holds the first item's PTD (alpha 0.5), not the refused second one's.
        QCOMPARE(QJsonDocument::fromJson(contents(QDir(out).filePath("a.json"))).object()["parameters"].toObject()["alpha"].toDouble(),
                 0.5);
    }

    void jobsOverTheItemCapAreRefused()
    {
        QTemporaryDir dir;
        QByteArray items;
        for (int i = 0; i <= 100000; ++i)
            items += QByteArray(i ? "," : "") + "{\"type\": \"ptd\"}";
        const QString job = writeFile(dir.filePath("job.json"), "{\"items\": [" + items + "]}");
        const RopescopeRun r = runRopescope({"batch", job, "--output", dir.filePath("out")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("100001 items; a job may list at most 100000") && oneLine(r.err), r.err.constData());
        QVERIFY(!QDir(dir.filePath("out")).exists());
    }

    void fifoInputsAreRefusedAtOnce()
    {
        QTemporaryDir dir;
        const QString fifo = dir.filePath("job.json");
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        const RopescopeRun r = runRopescope({"batch", fifo, "--output", dir.filePath("out")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("the job file is not a regular file"), r.err.constData());
    }

    void configValuesOutOfRangeAreOneLine()
    {
        // rope_theta 1e40 used to abort the process from inside LibTorch (float overflow).
        QTemporaryDir dir;
        QFile source(QString(ROPESCOPE_TEST_DATA) + "/../../resources/models/mrope/config.json");
        QVERIFY(source.open(QIODevice::ReadOnly));
        QJsonObject config = QJsonDocument::fromJson(source.readAll()).object();
        config["rope_theta"] = 1e40;
        QJsonObject text = config["text_config"].toObject();
        if (!text.isEmpty()) {
            text["rope_theta"] = 1e40;
            config["text_config"] = text;
        }
        writeFile(dir.filePath("config.json"), QJsonDocument(config).toJson());
        const RopescopeRun r = runRopescope(
            {"forward", "--model", dir.path(), "--inputs", dir.filePath("none.safetensors"), "--output", dir.filePath("out.safetensors")},
            false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("'rope_theta' must be a number from 1 to 1e+30") && oneLine(r.err), r.err.constData());
    }

    void hugeTextVectorKeepsItsDirection()
    {
        const QStringList base{"positions", "--scheme", "circle", "--layout", "text:2,image:3x3,text:2"};
        const RopescopeRun unit = runRopescope(base + QStringList{"--text-vector", "1,1,1"});
        const RopescopeRun huge = runRopescope(base + QStringList{"--text-vector", "1e308,1e308,1e308"});
        QCOMPARE(huge.exitCode, 0);
        QCOMPARE(huge.out, unit.out);
    }

    // ---- Second sweep (issue "Hostile inputs, second sweep"); each failed before its fix. ----

    void evalSaveSamplesNeverWritesThroughALink()
    {
        QTemporaryDir dir;
        const QString samples = dir.filePath("s"), victim = writeFile(dir.filePath("victim"), "ORIG\n");
        QVERIFY(QDir().mkpath(samples));
        QVERIFY(QFile::link(victim, QDir(samples).filePath("sample_00.png")));
        const RopescopeRun r = runRopescope(
            {"eval", "--model", bundled("models/mrope"), "--samples", "1", "--save-samples", samples, "--output", dir.filePath("r.txt")},
            false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("sample_00.png: is a symbolic link") && oneLine(r.err), r.err.constData());
        QCOMPARE(contents(victim), QByteArray("ORIG\n"));
        QCOMPARE(QDir(samples).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System),
                 QStringList{"sample_00.png"});
        QVERIFY(!QFile::exists(dir.filePath("r.txt")));
    }

    void evalSaveSamplesRefusesAFifoWithoutWaiting()
    {
        QTemporaryDir dir;
        const QString samples = dir.filePath("s");
        QVERIFY(QDir().mkpath(samples));
        QCOMPARE(::mkfifo(QFile::encodeName(QDir(samples).filePath("sample_03.png")).constData(), 0600), 0);
        QElapsedTimer timer;
        timer.start();
        const RopescopeRun r =
            runRopescope({"eval", "--model", bundled("models/mrope"), "--samples", "1", "--save-samples", samples}, false);
        QVERIFY(timer.elapsed() < 120000);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("sample_03.png: exists and is not a regular file") && oneLine(r.err), r.err.constData());
        QCOMPARE(QDir(samples).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System),
                 QStringList{"sample_03.png"});
    }

    void evalSaveSamplesLeavesNothingOnFailure()
    {
        QTemporaryDir dir;
        const QString samples = dir.filePath("s");
        QVERIFY(QDir().mkpath(QDir(samples).filePath("sample_05.png"))); // a folder in a sample's place
        RopescopeRun r = runRopescope({"eval", "--model", bundled("models/mrope"), "--samples", "1", "--save-samples", samples}, false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("sample_05.png: exists and is not a regular file") && oneLine(r.err), r.err.constData());
        QCOMPARE(QDir(samples).entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden | QDir::System),
                 QStringList{"sample_05.png"});

        r = runRopescope({"eval", "--model", dir.filePath("nonexistent"), "--samples", "1", "--save-samples", dir.filePath("t")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY(oneLine(r.err));
        QVERIFY(!QFileInfo::exists(dir.filePath("t")));

        // And when all is well, the 20 samples and their questions are there.
        r = runRopescope({"eval", "--model", bundled("models/mrope"), "--samples", "1", "--save-samples", dir.filePath("ok")}, false);
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(QDir(dir.filePath("ok")).entryList({"sample_*.png"}).size(), 20);
        QCOMPARE(contents(QDir(dir.filePath("ok")).filePath("questions.jsonl")).count('\n'), 20);
    }

    void emptyPathsAreRefused()
    {
        QTemporaryDir dir;
        RopescopeRun r = runRopescope({"positions", "--scheme", "mrope", "--layout", "text:3", "--output", ""});
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--output: the path is empty") && oneLine(r.err), r.err.constData());
        r = runRopescope({"eval", "--model", bundled("models/mrope"), "--samples", "1", "--save-samples", ""}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--save-samples: the path is empty"), r.err.constData());
    }

    void severalLargeImagesRun()
    {
        // Three 1000 x 1000 pictures at --max-pixels 1e6 hold more than 2^24 pixel values: the vision cache's
        // sample index used to be a float32 linspace, which rounded past the end.
        QTemporaryDir dir;
        QImage big(1000, 1000, QImage::Format_RGB888);
        big.fill(Qt::white);
        QPainter(&big).fillRect(100, 100, 300, 300, Qt::red);
        QVERIFY(big.save(dir.filePath("big.png")));
        const RopescopeRun r =
            runRopescope({"attend", "--model", bundled("models/mrope"), "--image", dir.filePath("big.png"), "--image",
                          dir.filePath("big.png"), "--image", dir.filePath("big.png"), "--question", "what colour is the square",
                          "--max-pixels", "1000000", "--capture-layers", "3", "--output", dir.filePath("out")},
                         false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonObject summary = QJsonDocument::fromJson(contents(dir.filePath("out/summary.json"))).object();
        QCOMPARE(summary["images"].toArray().size(), 3);
        QCOMPARE(summary["images"].toArray()[2].toObject()["tokens"].toInt(), 35 * 35);
    }

    void preprocessorPixelsAreBounded()
    {
        QTemporaryDir dir;
        const QString model = modelCopy(dir);
        for (const QByteArray& pixels : {QByteArray("400000000"), QByteArray("1000000000000")}) {
            QFile::remove(QDir(model).filePath("preprocessor_config.json"));
            writeFile(QDir(model).filePath("preprocessor_config.json"), "{\"min_pixels\": " + pixels + ", \"max_pixels\": " + pixels + "}");
            const RopescopeRun r = runRopescope({"attend", "--model", model, "--image", bundled("samples/shapes.png"), "--question",
                                                 "what colour is the circle", "--output", dir.filePath("out")},
                                                false);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains("preprocessor_config.json: 'min_pixels' " + pixels + " is above RopeScope's cap") && oneLine(r.err),
                     r.err.constData());
            QVERIFY(!QFileInfo::exists(dir.filePath("out")));
        }
    }

    void forwardRefusesAnOversizedPromptAndFloatIds()
    {
        QTemporaryDir dir;
        const qint64 count = 1000000;
        QByteArray ids(static_cast<int>(count * 8), '\0');
        for (qint64 i = 0; i < count; ++i)
            qToLittleEndian<qint64>(1, ids.data() + i * 8);
        writeFile(dir.filePath("long.safetensors"), safetensorsOf("input_ids", "I64", count, ids));
        RopescopeRun r = runRopescope({"forward", "--model", bundled("models/mrope"), "--inputs", dir.filePath("long.safetensors"),
                                       "--output", dir.filePath("out.safetensors")},
                                      false);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("input_ids: the prompt is 1000000 tokens") && oneLine(r.err), r.err.constData());
        QVERIFY(!QFileInfo::exists(dir.filePath("out.safetensors")));

        QByteArray floats(3 * 4, '\0');
        for (int i = 0; i < 3; ++i)
            qToLittleEndian<float>(1.0f, floats.data() + i * 4);
        writeFile(dir.filePath("float.safetensors"), safetensorsOf("input_ids", "F32", 3, floats));
        r = runRopescope({"forward", "--model", bundled("models/mrope"), "--inputs", dir.filePath("float.safetensors"), "--output",
                          dir.filePath("out.safetensors")},
                         false);
        QCOMPARE(r.exitCode, 2); // the inputs file's fault: bad input (issue 71), no longer exit 1
        QVERIFY2(r.err.contains("input_ids: expected whole-number token ids (I64 or I32), got Float") && oneLine(r.err), r.err.constData());
    }

    void manySegmentsAreCappedAndPtdStaysLinear()
    {
        QStringList segments;
        for (int i = 0; i < 2048; ++i)
            segments << "image:1x1"
                     << "text:1";
        // 2048 images: a text x blocks matrix was 2048^2 doubles; now it runs in linear memory.
        RopescopeRun r = runRopescope({"ptd", "--scheme", "mrope", "--layout", segments.join(',')}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        segments << "image:1x1"
                 << "text:1";
        r = runRopescope({"ptd", "--scheme", "mrope", "--layout", segments.join(',')}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("4098 segments exceed the limit of 4096 segments") && oneLine(r.err), r.err.constData());
    }

    void helpInsideASchemesEntryIsAnError()
    {
        QTemporaryDir dir;
        for (const char* key : {"help", "h"}) {
            const RopescopeRun r = runRopescope({"attend", "--model", bundled("models/mrope"), "--image", bundled("samples/shapes.png"),
                                                 "--question", "what colour is the circle", "--schemes",
                                                 QString("mrope,circle:%1=1").arg(key), "--output", dir.filePath("out")},
                                                false);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains(QString("'%1' is not a scheme parameter").arg(key).toUtf8()) && oneLine(r.err), r.err.constData());
            QVERIFY(!r.out.contains("Usage:"));
            QVERIFY(!QFileInfo::exists(dir.filePath("out")));
        }
    }

    void layersOtherThanTheModelsAreRefused()
    {
        QTemporaryDir dir;
        const QStringList attend{"attend",
                                 "--model",
                                 bundled("models/mrope"),
                                 "--image",
                                 bundled("samples/shapes.png"),
                                 "--question",
                                 "what colour is the circle",
                                 "--output",
                                 dir.filePath("out")};
        for (const QStringList& extra : {QStringList{"--scheme", "circle", "--age", "strategy_2", "--layers", "2"},
                                         QStringList{"--scheme", "circle", "--age", "strategy_2", "--layers", "8"},
                                         QStringList{"--schemes", "mrope,circle:age=strategy_2:layers=2"}}) {
            const RopescopeRun r = runRopescope(attend + extra, false);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(r.err.contains("the model has 4 decoder layers") && oneLine(r.err), r.err.constData());
            QVERIFY(!QFileInfo::exists(dir.filePath("out")));
        }
        const RopescopeRun r = runRopescope(
            {"eval", "--model", bundled("models/mrope"), "--samples", "1", "--scheme", "circle", "--age", "strategy_2", "--layers", "2"},
            false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("--layers 2: the model has 4 decoder layers"), r.err.constData());
        // The model's own count is what an AGE run uses: strategy_2 on 4 layers is CCMM.
        const RopescopeRun ok =
            runRopescope(attend + QStringList{"--scheme", "circle", "--age", "strategy_2", "--capture-layers", "3"}, false);
        QVERIFY2(ok.exitCode == 0, ok.err.constData());
        QCOMPARE(QJsonDocument::fromJson(contents(dir.filePath("out/summary.json"))).object()["age"].toString(), QString("CCMM"));
    }

    void truncatedPngIsOneLine()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("cut.png"), contents(bundled("samples/shapes.png")).left(300));
        const RopescopeRun r = runRopescope({"attend", "--model", bundled("models/mrope"), "--image", dir.filePath("cut.png"), "--question",
                                             "what colour is the circle", "--output", dir.filePath("out")},
                                            false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(oneLine(r.err) && r.err.startsWith("ropescope attend: ") && r.err.contains("cut.png") && r.err.contains("Read Error"),
                 r.err.constData());
    }

    void controlCharactersInAQuestionAreEscaped()
    {
        QTemporaryDir dir;
        const RopescopeRun r =
            runRopescope({"attend", "--model", bundled("models/mrope"), "--image", bundled("samples/shapes.png"), "--question",
                          "what colour is the a\x1b[31mred", "--capture-layers", "3", "--output", dir.filePath("out")},
                         false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.err.contains("\\x1b[31mred") && !r.err.contains('\x1b') && !r.out.contains('\x1b'), r.err.constData());
    }

    void flagsThatCannotApplyAreRefused()
    {
        for (const QStringList& args :
             {QStringList{"eval", "--model", bundled("models/mrope"), "--samples", "1", "--theta", "5"},
              QStringList{"eval", "--model", bundled("models/mrope"), "--samples", "1", "--layout", "text:3"},
              QStringList{"freqs", "--scheme", "hard", "--layout", "text:2,image:2x2", "--allocation", "per-head"}}) {
            const RopescopeRun r = runRopescope(args, false);
            QCOMPARE(r.exitCode, 2);
            QVERIFY2(oneLine(r.err) && r.err.contains("--" + args[args.size() - 2].mid(2).toUtf8() + ":"), r.err.constData());
        }
    }

    void specialTokensInAQuestionAreNamed()
    {
        QTemporaryDir dir;
        const RopescopeRun r = runRopescope({"attend", "--model", bundled("models/mrope"), "--image", bundled("samples/shapes.png"),
                                             "--question", "what colour is <|video_pad|> the circle", "--output", dir.filePath("out")},
                                            false);
        QCOMPARE(r.exitCode, 2); // bad input, as docs/CLI.md says (it was 1)
        QVERIFY2(r.err.contains("the question holds the special token <|video_pad|>") && oneLine(r.err), r.err.constData());
    }

    // Issue 54 item 7: a tokenizer.json without the model's vision tokens is named, as bad input (exit 2).
    void aTokenizerWithoutTheVisionTokensIsNamed()
    {
        QTemporaryDir dir;
        const QString model = dir.filePath("model");
        QDir().mkpath(model);
        for (const QString& f : QDir(bundled("models/mrope")).entryList(QDir::Files))
            QVERIFY(QFile::copy(bundled("models/mrope/") + f, model + "/" + f));
        QFile t(model + "/tokenizer.json");
        QVERIFY(t.open(QIODevice::ReadOnly));
        QJsonObject tokenizer = QJsonDocument::fromJson(t.readAll()).object();
        t.close();
        QJsonArray kept;
        for (const QJsonValue& a : tokenizer["added_tokens"].toArray())
            if (!a.toObject()["content"].toString().contains("image"))
                kept.append(a);
        tokenizer["added_tokens"] = kept;
        QVERIFY(t.open(QIODevice::WriteOnly | QIODevice::Truncate));
        t.write(QJsonDocument(tokenizer).toJson());
        t.close();
        const RopescopeRun r = runRopescope({"attend", "--model", model, "--image", bundled("samples/shapes.png"), "--question",
                                             "what colour is the circle", "--output", dir.filePath("out")},
                                            false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("tokenizer.json: <|image_pad|> is not the config's image_token_id") && oneLine(r.err), r.err.constData());
        QVERIFY(!QFile::exists(dir.filePath("out/heatmap.png")));
    }
};

QTEST_GUILESS_MAIN(TestHostileCli)
#include "test_hostile_cli.moc"
