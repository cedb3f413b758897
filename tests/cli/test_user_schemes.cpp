// Schemes from the user's files (issue "Your own scheme"): Python scheme files, position tables, and
// export-scheme, through the ropescope binary. The round trip checks every built-in scheme's exported module
// against `ropescope positions`, run both by the embedded interpreter and by a plain python3.
#include "tests/support/test_paths.h"
#include "tests/support/csv_table.h"
#include "tests/support/run_ropescope.h"
#include "tests/support/test_files.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

namespace {

// Positions as [component][token] from the CSV `positions` writes.
QVector<QVector<double>> positionsOf(const QByteArray& csv)
{
    const CsvTable t = CsvTable::fromText(csv);
    QVector<QVector<double>> out(t.header.size() - 6);
    for (const QStringList& row : t.rows)
        for (qsizetype c = 6; c < row.size(); ++c)
            out[c - 6].append(row[c].toDouble());
    return out;
}

double maxDifference(const QVector<QVector<double>>& a, const QVector<QVector<double>>& b)
{
    if (a.size() != b.size() || a.isEmpty())
        return INFINITY;
    double worst = 0;
    for (qsizetype c = 0; c < a.size(); ++c) {
        if (a[c].size() != b[c].size())
            return INFINITY;
        for (qsizetype i = 0; i < a[c].size(); ++i)
            worst = std::max(worst, std::abs(a[c][i] - b[c][i]));
    }
    return worst;
}

QString fixture(const QString& path)
{
    return QString(ROPESCOPE_TEST_DATA) + "/fixtures/" + path;
}

const char* const kSphere = R"PY(import numpy as np
PARAMETERS = {"radius": (8.0, 0.5, 100.0)}
COMPONENTS = ["t", "h", "w"]

def positions(layout, radius):
    out = np.zeros((3, layout.tokens))
    nxt = 0.0
    for s in layout.segments:
        if s.kind == "text":
            out[:, s.start:s.start + s.length] = nxt + np.arange(s.length)
            nxt += s.length
            continue
        r, c = np.meshgrid(np.arange(s.rows), np.arange(s.cols), indexing="ij")
        theta, phi = np.pi * (r + 0.5) / s.rows, 2 * np.pi * c / s.cols
        per = s.rows * s.cols
        for f in range(s.frames):
            b = s.start + f * per
            out[0, b:b + per] = nxt + radius * np.cos(theta).ravel() + f
            out[1, b:b + per] = nxt + radius * (np.sin(theta) * np.cos(phi)).ravel()
            out[2, b:b + per] = nxt + radius * (np.sin(theta) * np.sin(phi)).ravel()
        nxt = out[:, s.start:s.start + s.length].max() + 1
    return out
)PY";

} // namespace

class TestUserSchemes : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Every built-in scheme, exported, reproduces `ropescope positions` on five layouts to 1e-9: loaded back
    // as a Python scheme by RopeScope, and run by a plain python3 with numpy. Non-default parameters where a
    // scheme has them, so the export carries them.
    void exportedSchemesRoundTrip()
    {
        const QStringList schemes{"hard",     "unordered",   "mrope",    "compact", "circle",        "vrope",   "videorope",
                                  "hope",     "v2pe",        "omnirope", "ilrope",  "spatial-reset", "mrope-i", "mhrope",
                                  "tad-rope", "videorope++", "mm-rope",  "glm-v",   "ernie-vl",      "xd-rope"};
        const QStringList layouts{"text:5,image:3x4,text:3", "text:2,image:2x3,text:1,image:4x2,text:2", "text:3,video:3x2x2,text:2",
                                  "text:7", "image:3x3,text:4"};
        const QMap<QString, QJsonObject> extra{{"circle", {{"alpha", 0.3}, {"radius", "auto-1.5"}, {"text-vector", "1,2,3"}}},
                                               {"mrope", {{"temporal", "qwen25vl"}, {"second-per-grid", 0.7}}},
                                               {"videorope", {{"temporal-stride", 1.5}}},
                                               {"v2pe", {{"visual-stride", 5}}},
                                               {"mm-rope", {{"position-scale", "2,3,5"}}},
                                               // A scheme file places the layout's own tokens: xd-rope without its newline column.
                                               {"xd-rope", {{"newline-column", "off"}}}};
        // The list is every built-in the binary knows (its help names each under "Built-in schemes:").
        const QString help = QString::fromUtf8(runRopescope({"positions", "--help"}).out);
        QStringList builtIns;
        for (const QString& line : help.section("Built-in schemes:", 1).section("\n\n", 0, 0).split('\n', Qt::SkipEmptyParts))
            builtIns << line.trimmed().section(QRegularExpression("[: ]"), 0, 0);
        QCOMPARE(builtIns, schemes);
        QTemporaryDir dir;
        // One batch job computes every table, built-in and loaded back (a process per table would take minutes).
        QJsonArray items;
        QStringList modules;
        for (const QString& scheme : schemes) {
            const QString module = dir.filePath(QString(scheme).replace("+", "p").replace("-", "_") + ".py");
            QStringList flags{"export-scheme", "--scheme", scheme, "--output", module};
            const QJsonObject given = extra.value(scheme);
            for (auto it = given.begin(); it != given.end(); ++it)
                flags << "--" + it.key() << (it.value().isString() ? it.value().toString() : QString::number(it.value().toDouble()));
            const auto exported = runRopescope(flags);
            QVERIFY2(exported.exitCode == 0, exported.err.constData());
            modules << module;
            for (qsizetype l = 0; l < layouts.size(); ++l) {
                QJsonObject builtIn = extra.value(scheme);
                builtIn["type"] = "table";
                builtIn["scheme"] = scheme;
                builtIn["layout"] = layouts[l];
                builtIn["output"] = QString("%1_%2_builtin.csv").arg(modules.size()).arg(l);
                items.append(builtIn);
                items.append(QJsonObject{{"type", "table"},
                                         {"scheme", module},
                                         {"layout", layouts[l]},
                                         {"output", QString("%1_%2_loaded.csv").arg(modules.size()).arg(l)}});
            }
        }
        const QString job = writeFile(dir.filePath("job.json"), QJsonDocument(QJsonObject{{"items", items}}).toJson());
        const auto tables = runRopescope({"batch", job, "--output", dir.filePath("tables"), "--trust-python"});
        QVERIFY2(tables.exitCode == 0, tables.err.constData());
        // And a plain python3 runs each module on each layout (the module's own layout_from_spec).
        QProcess py;
        py.start(ROPESCOPE_PYTHON,
                 QStringList{"-c", R"PY(
import importlib.util, json, sys
out = {}
for path in sys.argv[2:]:
    spec = importlib.util.spec_from_file_location("m", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    out[path] = [m.positions(m.layout_from_spec(l)).tolist() for l in sys.argv[1].split(";")]
print(json.dumps(out))
)PY",
                             layouts.join(';')} +
                     modules);
        QVERIFY(py.waitForFinished(120000) && py.exitCode() == 0);
        const QJsonObject plainTables = QJsonDocument::fromJson(py.readAllStandardOutput()).object();
        double worst = 0;
        int compared = 0;
        for (qsizetype s = 0; s < modules.size(); ++s)
            for (qsizetype l = 0; l < layouts.size(); ++l) {
                auto read = [&](const char* kind) {
                    QFile f(dir.filePath(QString("tables/%1_%2_%3.csv").arg(s + 1).arg(l).arg(kind)));
                    return f.open(QIODevice::ReadOnly) ? positionsOf(f.readAll()) : QVector<QVector<double>>();
                };
                QVector<QVector<double>> plain;
                for (const QJsonValue& row : plainTables[modules[s]].toArray()[l].toArray()) {
                    plain.append(QVector<double>());
                    for (const QJsonValue& x : row.toArray())
                        plain.back().append(x.toDouble());
                }
                const auto want = read("builtin");
                const double embedded = maxDifference(want, read("loaded")), python = maxDifference(want, plain);
                QVERIFY2(embedded < 1e-9 && python < 1e-9,
                         qPrintable(schemes[s] + " on " + layouts[l] + QString(": embedded %1, python3 %2").arg(embedded).arg(python)));
                worst = std::max({worst, embedded, python});
                ++compared;
            }
        QCOMPARE(compared, static_cast<int>(schemes.size()) * 5);
        qInfo("%d schemes x 5 layouts: largest difference %.3g", static_cast<int>(schemes.size()), worst);
    }

    // Loaded back, an export gives the built-in's PTD; a changed parameter changes it (the file's parameters
    // are its own, not fixed).
    void exportedSchemeGivesTheSamePtd()
    {
        QTemporaryDir dir;
        const QString module = dir.filePath("mm_rope.py");
        QCOMPARE(runRopescope({"export-scheme", "--scheme", "mm-rope", "--position-scale", "4,2,8", "--output", module}).exitCode, 0);
        const QString layout = "text:8,image:8x8,text:8,image:5x7,text:3";
        const auto builtIn = runRopescope({"ptd", "--scheme", "mm-rope", "--position-scale", "4,2,8", "--layout", layout, "--json"});
        const auto loaded = runRopescope({"ptd", "--scheme", module, "--layout", layout, "--json"});
        const auto moved = runRopescope({"ptd", "--scheme", module, "--param", "scale_h=8", "--layout", layout, "--json"});
        QVERIFY2(builtIn.exitCode == 0 && loaded.exitCode == 0 && moved.exitCode == 0, (builtIn.err + loaded.err + moved.err).constData());
        const double want = QJsonDocument::fromJson(builtIn.out).object()["ptd"].toDouble();
        QVERIFY(want > 0);
        QVERIFY(std::abs(QJsonDocument::fromJson(loaded.out).object()["ptd"].toDouble() - want) < 1e-12);
        QVERIFY(std::abs(QJsonDocument::fromJson(moved.out).object()["ptd"].toDouble() - want) > 1e-3);
        QCOMPARE(QJsonDocument::fromJson(loaded.out).object()["scheme"].toString(), QString("mm_rope.py"));
    }

    // A hand-written scheme with a parameter: the value reaches positions(), out-of-range and unknown names
    // are refused naming the file's PARAMETERS.
    void parametersReachTheFile()
    {
        QTemporaryDir dir;
        const QString file = writeFile(dir.filePath("sphere.py"), kSphere);
        const auto small = runRopescope({"positions", "--scheme", file, "--layout", "text:2,image:2x2,text:1", "--param", "radius=1"});
        const auto large = runRopescope({"positions", "--scheme", file, "--layout", "text:2,image:2x2,text:1", "--param", "radius=3"});
        QVERIFY2(small.exitCode == 0 && large.exitCode == 0, (small.err + large.err).constData());
        // Token 2 (row 0, col 0): t = 2 + radius * cos(pi / 4).
        QVERIFY(std::abs(positionsOf(small.out)[0][2] - (2 + std::cos(M_PI / 4))) < 1e-12);
        QVERIFY(std::abs(positionsOf(large.out)[0][2] - (2 + 3 * std::cos(M_PI / 4))) < 1e-12);
        const auto tooLarge = runRopescope({"positions", "--scheme", file, "--layout", "text:2", "--param", "radius=300"});
        QCOMPARE(tooLarge.exitCode, 2);
        QVERIFY2(tooLarge.err.contains("radius must be from 0.5 to 100"), tooLarge.err.constData());
        const auto unknown = runRopescope({"positions", "--scheme", file, "--layout", "text:2", "--param", "rad=3"});
        QCOMPARE(unknown.exitCode, 2);
        QVERIFY2(unknown.err.contains("has no parameter 'rad' (it declares radius)"), unknown.err.constData());
    }

    // The hand-written examples load and place every token; the get_rope_index written against transformers'
    // form of the layout (input_ids, grids, special ids) reproduces the built-in M-RoPE.
    void examplesRun()
    {
        const QString examples = test_paths::sourceDir() + "/examples/schemes/";
        for (const QString name : {"sphere.py", "text_on_normal.py", "qwen2vl_rope_index.py"}) {
            const auto r =
                runRopescope({"ptd", "--scheme", examples + name, "--layout", "text:4,image:6x5,text:3,video:2x3x3,text:2", "--json"});
            QVERIFY2(r.exitCode == 0, r.err.constData());
            QVERIFY(std::isfinite(QJsonDocument::fromJson(r.out).object()["ptd"].toDouble()));
        }
        for (const QString layout : {"text:5,image:3x4,text:3", "text:2,image:2x3,text:1,image:4x2,text:2", "text:3,video:3x2x2,text:2"}) {
            const auto lifted = runRopescope({"positions", "--scheme", examples + "qwen2vl_rope_index.py", "--layout", layout});
            const auto builtIn = runRopescope({"positions", "--scheme", "mrope", "--layout", layout});
            QVERIFY2(lifted.exitCode == 0, lifted.err.constData());
            QCOMPARE(lifted.out, builtIn.out);
        }
    }

    // Each bad file: one line naming the file (and line), exit 2, nothing written, and a bounded run.
    void badFilesGiveOneLine_data()
    {
        QTest::addColumn<QByteArray>("source");
        QTest::addColumn<QString>("layout");
        QTest::addColumn<QString>("expected");
        QTest::newRow("syntax error") << QByteArray("def positions(layout):\n    return [1, 2\n") << "text:2"
                                      << "bad.py:2: SyntaxError";
        QTest::newRow("exception") << QByteArray("def positions(layout):\n    return 1 / 0\n") << "text:2"
                                   << "bad.py:2: ZeroDivisionError";
        QTest::newRow("wrong shape") << QByteArray(
                                            "import numpy as np\ndef positions(layout):\n    return np.zeros((3, layout.tokens + 1))\n")
                                     << "text:2"
                                     << "positions() returned 19 positions per component";
        QTest::newRow("nan") << QByteArray("import numpy as np\ndef positions(layout):\n    return np.full((3, layout.tokens), np.nan)\n")
                             << "text:2"
                             << "positions() returned NaN at token 0";
        QTest::newRow("string") << QByteArray("def positions(layout):\n    return 'abc'\n") << "text:2"
                                << "positions() returned a str";
        QTest::newRow("missing import") << QByteArray("import not_a_module_here\ndef positions(layout):\n    return 0\n") << "text:2"
                                        << "bad.py:1: ModuleNotFoundError: No module named 'not_a_module_here'";
        QTest::newRow("endless loop") << QByteArray("def positions(layout):\n    while True:\n        pass\n") << "text:2"
                                      << "bad.py:2: positions() ran longer than 0.5 s and was stopped";
        QTest::newRow("loop that catches everything")
            << QByteArray(
                   "def positions(layout):\n    while True:\n        try:\n            pass\n        except Exception:\n            pass\n")
            << "text:2"
            << "positions() ran longer than 0.5 s and was stopped";
        QTest::newRow("no positions") << QByteArray("x = 1\n") << "text:2"
                                      << "bad.py: defines no positions(layout, **params) function";
        QTest::newRow("five components") << QByteArray(
                                                "import numpy as np\ndef positions(layout):\n    return np.zeros((5, layout.tokens))\n")
                                         << "text:2"
                                         << "positions() returned 5 components";
        QTest::newRow("bad PARAMETERS") << QByteArray("PARAMETERS = {'a': (5, 0, 1)}\ndef positions(layout, a):\n    return [0]\n")
                                        << "text:2"
                                        << "need finite min <= default <= max";
        QTest::newRow("1e8 tokens") << QByteArray("def positions(layout):\n    return [0]\n") << "text:100000000"
                                    << "--layout";
    }
    void badFilesGiveOneLine()
    {
        QFETCH(QByteArray, source);
        QFETCH(QString, layout);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        const QString file = writeFile(dir.filePath("bad.py"), source);
        const QString out = dir.filePath("out.csv");
        qputenv("ROPESCOPE_PYTHON_TIME_LIMIT_MS", "500");
        QElapsedTimer timer;
        timer.start();
        const auto r = runRopescope({"positions", "--scheme", file, "--layout", layout, "--output", out});
        qunsetenv("ROPESCOPE_PYTHON_TIME_LIMIT_MS");
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(expected.toUtf8()), r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(!QFile::exists(out));
        QVERIFY(timer.elapsed() < 20000);
    }

    // Position tables in: what `positions` writes (CSV, JSON) reads back to the same table and layout; .npy and
    // the fixtures' position_ids (transformers' get_rope_index) equal the built-in table exactly.
    void positionTablesReadBack()
    {
        QTemporaryDir dir;
        const QString layout = "text:3,image:2x3,text:2,video:2x2x2,text:1";
        const auto table = runRopescope({"positions", "--scheme", "circle", "--layout", layout, "--alpha", "0.4"});
        QVERIFY(table.exitCode == 0);
        const QString csv = writeFile(dir.filePath("t.csv"), table.out);
        const QString json = dir.filePath("t.json");
        QCOMPARE(runRopescope({"positions", "--scheme", "circle", "--layout", layout, "--alpha", "0.4", "--output", json}).exitCode, 0);
        for (const QString& file : {csv, json}) {
            const auto back = runRopescope({"positions", "--positions", file});
            QVERIFY2(back.exitCode == 0, back.err.constData());
            QCOMPARE(back.out, table.out); // same layout columns, same numbers, byte for byte
        }
        // A .npy [3, L] written by numpy.
        const QString npy = dir.filePath("p.npy");
        QProcess py;
        py.start(ROPESCOPE_PYTHON,
                 {"-c", "import numpy as np, sys; np.save(sys.argv[1], np.arange(24, dtype=np.float32).reshape(3, 8) * 0.5)", npy});
        QVERIFY(py.waitForFinished(60000) && py.exitCode() == 0);
        const auto fromNpy = runRopescope({"positions", "--positions", npy, "--layout", "text:2,image:2x3"});
        QVERIFY2(fromNpy.exitCode == 0, fromNpy.err.constData());
        QCOMPARE(positionsOf(fromNpy.out)[2][7], 11.5);
        // The fixtures' position_ids [3, 1, L] are Qwen2-VL's M-RoPE of the prompt's layout (text:3,image:2x3,...).
        for (const QString model : {"qwen2vl-tiny", "qwen3vl-tiny"}) {
            const QString prompt = "text:3,image:2x3,text:5,image:3x5,text:3";
            const auto imported =
                runRopescope({"positions", "--positions", fixture(model + "/expected_multi.safetensors"), "--layout", prompt});
            const auto builtIn = runRopescope({"positions", "--scheme", model == "qwen3vl-tiny" ? "mrope-i" : "mrope", "--layout", prompt});
            QVERIFY2(imported.exitCode == 0, imported.err.constData());
            QCOMPARE(imported.out, builtIn.out);
        }
    }

    void badPositionTablesGiveOneLine_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QStringList>("extra");
        QTest::addColumn<QString>("expected");
        QTest::newRow("count differs") << "t.csv" << QByteArray("index,modality,segment,frame,row,col,p0\n0,text,0,,,,0\n1,text,0,,,,1\n")
                                       << QStringList{"--layout", "text:3"}
                                       << "t.csv holds positions for 2 tokens; the sequence (text:3) has 3";
        QTest::newRow("bad header") << "t.csv" << QByteArray("a,b\n1,2\n") << QStringList{} << "the header must be index,modality";
        QTest::newRow("not a number") << "t.csv" << QByteArray("index,modality,segment,frame,row,col,p0\n0,text,0,,,,x\n") << QStringList{}
                                      << "line 2: p0 is not a number";
        QTest::newRow("broken grid") << "t.csv"
                                     << QByteArray("index,modality,segment,frame,row,col,p0\n0,image,0,0,0,0,0\n1,image,0,0,1,1,1\n")
                                     << QStringList{} << "segment 0 is not a complete frames x rows x cols grid";
        QTest::newRow("npy truncated")
            << "p.npy" << QByteArray("\x93NUMPY\x01\x00\x40\x00{'descr': '<f8', 'fortran_order': False, 'shape': (3, 1000), }    \n", 74)
            << QStringList{"--layout", "text:1000"} << "holds fewer values than its shape needs";
        QTest::newRow("npy header past end") << "p.npy" << QByteArray("\x93NUMPY\x01\x00\xff\xff{", 11) << QStringList{"--layout", "text:2"}
                                             << "the .npy header runs past the end of the file";
        // JSON tables are read one value at a time (no document tree): malformed text is one line naming the byte.
        QTest::newRow("json truncated") << "t.json" << QByteArray("{\"tokens\": [{\"p\": [0, 1") << QStringList{}
                                        << "not JSON: the text ends inside a container at byte 23";
        QTest::newRow("json bad escape") << "t.json" << QByteArray("{\"tok\\qens\": []}") << QStringList{} << "not JSON: an unknown escape";
        QTest::newRow("json deep") << "t.json" << QByteArray("{\"x\": ") + QByteArray(100, '[') + QByteArray(100, ']') + "}"
                                   << QStringList{} << "nesting deeper than 64";
        QTest::newRow("json p not numbers") << "t.json" << QByteArray("{\"tokens\": [{\"p\": [\"1\"], \"modality\": \"text\"}]}")
                                            << QStringList{} << "not JSON: expected a number";
        QTest::newRow("json ragged") << "t.json"
                                     << QByteArray(
                                            "{\"tokens\": [{\"p\": [0, 0], \"modality\": \"text\"}, {\"p\": [1], \"modality\": \"text\"}]}")
                                     << QStringList{} << "token 1 has 1 positions; token 0 has 2";
        QTest::newRow("unknown kind") << "p.txt" << QByteArray("1 2 3") << QStringList{"--layout", "text:3"}
                                      << "unknown kind of position table";
        QTest::newRow("no layout") << "p.npy" << QByteArray() << QStringList{} << "--layout is required";
    }
    void badPositionTablesGiveOneLine()
    {
        QFETCH(QString, name);
        QFETCH(QByteArray, content);
        QFETCH(QStringList, extra);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        QString file = dir.filePath(name);
        if (content.isEmpty()) { // a valid .npy with no layout
            QProcess py;
            py.start(ROPESCOPE_PYTHON, {"-c", "import numpy as np, sys; np.save(sys.argv[1], np.zeros((3, 4)))", file});
            QVERIFY(py.waitForFinished(60000) && py.exitCode() == 0);
        } else {
            writeFile(file, content);
        }
        const QString out = dir.filePath("out.csv");
        const auto r = runRopescope(QStringList{"positions", "--positions", file, "--output", out} + extra);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(expected.toUtf8()), r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(!QFile::exists(out));
    }

    // A batch job names a Python file: refused without --trust-python before anything is written; with it,
    // param.NAME sweeps the file's parameter.
    void batchNeedsTrust()
    {
        QTemporaryDir dir;
        writeFile(dir.filePath("sphere.py"), kSphere);
        const QString job =
            writeFile(dir.filePath("job.json"),
                      QJsonDocument(QJsonObject{{"defaults", QJsonObject{{"layout", "text:4,image:6x6,text:4"}}},
                                                {"items",
                                                 QJsonArray{QJsonObject{{"type", "ptd"},
                                                                        {"scheme", dir.filePath("sphere.py")},
                                                                        {"output", "ptd_{param.radius}.json"},
                                                                        {"sweep", QJsonObject{{"param.radius", QJsonArray{2, 8}}}}}}}})
                          .toJson());
        const QString out = dir.filePath("out");
        const auto refused = runRopescope({"batch", job, "--output", out});
        QCOMPARE(refused.exitCode, 2);
        QVERIFY2(refused.err.contains("names the Python scheme") && refused.err.contains("--trust-python"), refused.err.constData());
        QVERIFY(!QDir(out).exists());
        const auto trusted = runRopescope({"batch", job, "--output", out, "--trust-python"});
        QVERIFY2(trusted.exitCode == 0, trusted.err.constData());
        auto ptdOf = [&](const QString& name) {
            QFile f(QDir(out).filePath(name));
            return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object()["ptd"].toDouble() : -1.0;
        };
        const auto direct = runRopescope(
            {"ptd", "--scheme", dir.filePath("sphere.py"), "--param", "radius=8", "--layout", "text:4,image:6x6,text:4", "--json"});
        QVERIFY(ptdOf("ptd_2.json") > 0);
        QVERIFY(std::abs(ptdOf("ptd_8.json") - QJsonDocument::fromJson(direct.out).object()["ptd"].toDouble()) < 1e-12);
        QVERIFY(std::abs(ptdOf("ptd_8.json") - ptdOf("ptd_2.json")) > 1e-3);
    }
};

QTEST_GUILESS_MAIN(TestUserSchemes)
#include "test_user_schemes.moc"
