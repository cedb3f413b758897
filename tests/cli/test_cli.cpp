#include "tests/support/csv_table.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include "tests/support/run_ropescope.h"
#include "tests/support/test_paths.h"

#include <cmath>

using Run = RopescopeRun;

static Run ropescope(const QStringList& args)
{
    return runRopescope(args);
}

class TestCli : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void positionsCsvToStdout()
    {
        const Run r = ropescope({"positions", "--scheme", "mrope", "--layout", "text:2,image:2x3,text:2"});
        QCOMPARE(r.exitCode, 0);
        const CsvTable csv = CsvTable::fromText(r.out);
        QCOMPARE(csv.header.join(','), QString("index,modality,segment,frame,row,col,p0,p1,p2"));
        QCOMPARE(csv.rows.size(), 10);
        QCOMPARE(csv.rows[7].join(','), QString("7,image,1,0,1,2,2,3,4"));
        QCOMPARE(csv.rows[8].join(','), QString("8,text,2,,,,5,5,5"));
    }

    void positionsJsonFile()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("table.json");
        const Run r = ropescope({"positions", "--scheme", "circle", "--layout", "text:4,image:8x8,text:6", "--alpha", "0.25", "--radius",
                                 "auto-2", "--output", out});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.isEmpty());
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(root["tokens"].toArray().size(), 74);
        QCOMPARE(root["parameters"].toObject()["alpha"].toDouble(), 0.25);
        QCOMPARE(root["parameters"].toObject()["radius_mode"].toString(), QString("auto"));
        // The last text token resumes at max+1 of the ring: R = 2 * |(3.5,3.5)| around c = 4.
        const QJsonArray last = root["tokens"].toArray().last().toObject()["p"].toArray();
        QVERIFY(last[0].toDouble() > 4 + 2 * 4.9 * 0.8);
    }

    void interleavedMropeAllocation()
    {
        // Qwen3-VL's allocation for any three-axis scheme; the table names it, with its sections.
        const Run r = ropescope(
            {"positions", "--scheme", "circle", "--layout", "text:2,image:2x2", "--allocation", "interleaved-mrope", "--format", "json"});
        QCOMPARE(r.exitCode, 0);
        const QJsonObject allocation = QJsonDocument::fromJson(r.out).object()["allocation"].toObject();
        QCOMPARE(allocation["kind"].toString(), QString("interleaved-mrope"));
        QCOMPARE(allocation["sections"].toArray(), (QJsonArray{24, 20, 20}));
        const Run vrope =
            ropescope({"positions", "--scheme", "vrope", "--layout", "text:2,image:2x2", "--allocation", "interleaved-mrope"});
        QCOMPARE(vrope.exitCode, 2);
        QVERIFY2(vrope.err.contains("three-axis schemes"), vrope.err.constData());
    }

    void freqsReportsTheAllocation()
    {
        QTemporaryDir dir;
        const QStringList base{"freqs", "--scheme", "mrope", "--layout", "text:2,image:8x8"};
        const Run csv = ropescope(base);
        QCOMPARE(csv.exitCode, 0);
        const QList<QByteArray> lines = csv.out.trimmed().split('\n');
        QCOMPARE(lines.size(), 65);
        QCOMPARE(lines[0], QByteArray("pair,axis,inv_freq,wavelength,turn_across_grid,use,head_share,dim_a,dim_b"));
        QVERIFY2(lines[17].startsWith("16,h,0.031622776601683") && lines[17].endsWith(",resolves,1,16,80"), lines[17].constData());
        // Pair 16 of 64 turns dims 16 and 80 (the half split); GLM's adjacent pairs turn 32 and 33.
        const Run adjacent = ropescope({"freqs", "--scheme", "mrope", "--layout", "text:2,image:8x8", "--pairing", "adjacent"});
        QCOMPARE(adjacent.exitCode, 0);
        QVERIFY(adjacent.out.trimmed().split('\n')[17].endsWith(",resolves,1,32,33"));
        const Run badPairing = ropescope({"freqs", "--scheme", "mrope", "--layout", "text:2,image:8x8", "--pairing", "diagonal"});
        QCOMPARE(badPairing.exitCode, 2);
        QVERIFY2(badPairing.err.trimmed() == "ropescope freqs: --pairing: unknown pairing 'diagonal' (expected half or adjacent)",
                 badPairing.err.constData());
        // MHRoPE: every pair once per axis, weighted by the axis' share of the 8 KV heads (2, 3, 3).
        const Run perHead = ropescope({"freqs", "--scheme", "mhrope", "--layout", "text:2,image:8x8"});
        QCOMPARE(perHead.exitCode, 0);
        const QList<QByteArray> headLines = perHead.out.trimmed().split('\n');
        QCOMPARE(headLines.size(), 1 + 3 * 64);
        QVERIFY2(headLines[1].startsWith("0,t,1,") && headLines[1].endsWith(",0.25,0,64"), headLines[1].constData());
        QVERIFY2(headLines[65].startsWith("0,h,1,") && headLines[65].endsWith(",0.375,0,64"), headLines[65].constData());
        const QString json = dir.filePath("f.json");
        QCOMPARE(ropescope(base + QStringList{"--allocation", "interleaved-mrope", "--output", json}).exitCode, 0);
        QFile f(json);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QJsonObject root = QJsonDocument::fromJson(f.readAll()).object();
        QCOMPARE(root["allocation"].toString(), QString("interleaved-mrope[24,20,20]"));
        QCOMPARE(root["pairs"].toArray().size(), 64);
        QCOMPARE(root["pairs"].toArray()[5].toObject()["dims"].toArray(), (QJsonArray{5, 69}));
        QCOMPARE(root["spans"].toObject()["h"].toDouble(), 7.0);
        QCOMPARE(root["decay"].toObject()["w"].toArray().size(), root["distances"].toArray().size());
        const QString svg = dir.filePath("f.svg");
        QCOMPARE(ropescope(base + QStringList{"--output", svg}).exitCode, 0);
        QFile s(svg);
        QVERIFY(s.open(QIODevice::ReadOnly) && s.readAll().contains("<svg"));
        QCOMPARE(ropescope(base + QStringList{"--output", dir.filePath("f.txt")}).exitCode, 2);
    }

    // Gemma 4's full layers (issue 73 §2): a quarter of a 512-wide head rotates, "proportionally". Every pair of freqs'
    // table against an independent computation: theta^(-2j/512) for j < 64 and 0 elsewhere, on dims j and j + 256;
    // the same from the 31B's config (--model, --layer-kind full) as from the flags; ptd says which dims rotate.
    void freqsShowGemmasProportionalRotary()
    {
        const QString config = ROPESCOPE_TEST_DATA + "/../../resources/configs/gemma-4-31b.json";
        const QStringList layout{"--scheme", "mrope", "--layout", "text:2,image:16x16"};
        const Run fromModel = ropescope(QStringList{"freqs"} + layout + QStringList{"--model", config, "--layer-kind", "full"});
        QVERIFY2(fromModel.exitCode == 0, fromModel.err.constData());
        const Run fromFlags = ropescope(QStringList{"freqs"} + layout +
                                        QStringList{"--theta", "1e6", "--head-dim", "512", "--partial-rotary", "0.25", "--proportional"});
        QVERIFY2(fromFlags.exitCode == 0, fromFlags.err.constData());
        QCOMPARE(fromModel.out, fromFlags.out);
        const CsvTable csv = CsvTable::fromText(fromModel.out);
        QCOMPARE(csv.rows.size(), 256);
        const auto at = [&](int row, const char* column) { return csv.rows[row][csv.header.indexOf(column)]; };
        for (int j = 0; j < 256; ++j) {
            QCOMPARE(at(j, "pair").toInt(), j);
            QCOMPARE(at(j, "dim_a").toInt(), j);
            QCOMPARE(at(j, "dim_b").toInt(), j + 256);
            const double expected = j < 64 ? std::pow(1e6, -2.0 * j / 512) : 0.0;
            QVERIFY2(std::abs(at(j, "inv_freq").toDouble() - expected) <= 1e-15 * std::max(1.0, expected),
                     qPrintable(csv.rows[j].join(',')));
            QCOMPARE(at(j, "axis") == "none", j >= 64);
            QCOMPARE(at(j, "use") == "unrotated", j >= 64);
        }
        // M-RoPE's default sections split the 64 rotated pairs 16 / 24 / 24.
        QCOMPARE(at(15, "axis"), QString("t"));
        QCOMPARE(at(16, "axis"), QString("h"));
        QCOMPARE(at(40, "axis"), QString("w"));
        // The sliding layers: the whole 256-wide head at theta 1e4.
        const CsvTable sliding =
            CsvTable::fromText(ropescope(QStringList{"freqs"} + layout + QStringList{"--model", config, "--layer-kind", "sliding"}).out);
        QCOMPARE(sliding.rows.size(), 128);
        QVERIFY(std::abs(sliding.rows[1][2].toDouble() - std::pow(1e4, -2.0 / 256)) < 1e-15);
        // ptd: which dims rotate at which frequencies, in text and JSON.
        const Run ptd = ropescope(QStringList{"ptd"} + layout + QStringList{"--model", config, "--layer-kind", "full"});
        QVERIFY2(ptd.exitCode == 0, ptd.err.constData());
        QVERIFY2(
            ptd.out.contains("rotary: theta 1000000, head_dim 512, 128 dims rotate: dims 0-63 and 256-319 (pair j on dims j and j+256)") &&
                ptd.out.contains("the head's other 192 pairs never turn") &&
                ptd.out.contains("allocation sectioned[16,24,24] over the 64 rotated pairs"),
            ptd.out.constData());
        const Run json = ropescope(QStringList{"ptd"} + layout + QStringList{"--model", config, "--layer-kind", "full", "--json"});
        const QJsonObject rotary = QJsonDocument::fromJson(json.out).object()["rotary"].toObject();
        QCOMPARE(rotary["proportional"].toBool(), true);
        QCOMPARE(rotary["pairs"].toArray().size(), 256);
        QCOMPARE(rotary["pairs"].toArray()[63].toObject()["dims"].toArray(), (QJsonArray{63, 319}));
        // Bad combinations, one line each.
        const Run both = ropescope(QStringList{"freqs"} + layout + QStringList{"--model", config, "--theta", "1e4"});
        QCOMPARE(both.exitCode, 2);
        QVERIFY2(both.err.contains("--theta: --model gives the rotary settings"), both.err.constData());
        const Run kind = ropescope(QStringList{"freqs"} + layout + QStringList{"--layer-kind", "full"});
        QCOMPARE(kind.exitCode, 2);
        QVERIFY2(kind.err.contains("--layer-kind: picks a kind of a model's decoder layers; give --model DIR"), kind.err.constData());
        const Run none = ropescope(QStringList{"freqs"} + layout +
                                   QStringList{"--model", ROPESCOPE_TEST_DATA + "/fixtures/qwen2vl-tiny", "--layer-kind", "sliding"});
        QCOMPARE(none.exitCode, 2);
        QVERIFY2(none.err.contains("qwen2_vl has no sliding layers"), none.err.constData());
    }

    void ageSelectsTheLayerTable()
    {
        const QStringList base{"positions", "--layout", "text:3,image:4x4,text:2"};
        const Run layer1 = ropescope(base + QStringList{"--scheme", "circle", "--age", "strategy_4", "--layer", "1", "--layers", "4"});
        const Run layer2 = ropescope(base + QStringList{"--scheme", "circle", "--age", "strategy_4", "--layer", "2", "--layers", "4"});
        const Run mrope = ropescope(base + QStringList{"--scheme", "mrope"});
        const Run circle = ropescope(base + QStringList{"--scheme", "circle"});
        QCOMPARE(layer1.exitCode, 0);
        QCOMPARE(layer1.out, mrope.out);
        QCOMPARE(layer2.out, circle.out);
    }

    void paperTable1()
    {
        const Run r = ropescope({"ptd", "--paper-table1"});
        QCOMPARE(r.exitCode, 0);
        for (const char* value : {"2.2222", "0.6414", "0.4844", "Hard", "Unordered", "Spatial", "Circle", "M-RoPE"})
            QVERIFY2(r.out.contains(value), value);
        const Run j = ropescope({"ptd", "--paper-table1", "--json"});
        const QJsonArray rows = QJsonDocument::fromJson(j.out).object()["paper_table1"].toArray();
        QCOMPARE(rows.size(), 5);
        QVERIFY(std::abs(rows[0].toObject()["ptd"].toDouble() - 20.0 / 9) < 1e-12);
    }

    void ptdReport()
    {
        const Run r = ropescope({"ptd", "--scheme", "circle", "--layout", "text:4,image:8x8,text:6", "--per-token"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("PTD 0.000000"));
        QVERIFY(r.out.contains("min pair distance 0.00402445"));
        QCOMPARE(r.out.count("\n"), 4 + 2 + 10); // title, PTD, 1 block, crowding; blank, table header; 10 tokens
        const Run j = ropescope({"ptd", "--scheme", "hard", "--layout", "image:1x3,text:1,image:1x2", "--json"});
        const QJsonObject root = QJsonDocument::fromJson(j.out).object();
        QVERIFY(std::abs(root["ptd"].toDouble() - 7.0 / 12) < 1e-12);
        QCOMPARE(root["per_block"].toArray().size(), 2);
    }

    void badInputExitsTwoWithOneLine_data()
    {
        QTest::addColumn<QStringList>("args");
        QTest::addColumn<QString>("mentions");
        const QStringList pos{"positions", "--scheme", "circle", "--layout", "text:4,image:3x3"};
        QTest::newRow("layout kind") << QStringList{"positions", "--scheme", "mrope", "--layout", "text:4,imag:3x3"}
                                     << "unknown kind 'imag'";
        QTest::newRow("layout zero") << QStringList{"positions", "--scheme", "mrope", "--layout", "image:0x3"} << "at least 1";
        QTest::newRow("scheme") << QStringList{"positions", "--scheme", "spiral", "--layout", "text:1"} << "--scheme";
        QTest::newRow("no scheme") << QStringList{"positions", "--layout", "text:1"} << "--scheme is required";
        QTest::newRow("no layout") << QStringList{"ptd", "--scheme", "hard"} << "--layout is required";
        QTest::newRow("alpha nan") << pos + QStringList{"--alpha", "abc"} << "--alpha";
        QTest::newRow("alpha range") << pos + QStringList{"--alpha", "2"} << "--alpha";
        QTest::newRow("radius") << pos + QStringList{"--radius", "auto-x"} << "--radius";
        QTest::newRow("radius zero") << pos + QStringList{"--radius", "0"} << "--radius";
        QTest::newRow("vector") << pos + QStringList{"--text-vector", "1,1"} << "--text-vector";
        QTest::newRow("vector zero") << pos + QStringList{"--text-vector", "0,0,0"} << "--text-vector";
        QTest::newRow("age") << pos + QStringList{"--age", "strategy_9"} << "--age";
        QTest::newRow("layer") << pos + QStringList{"--age", "strategy_4", "--layers", "4", "--layer", "4"} << "--layer";
        QTest::newRow("layer without age") << pos + QStringList{"--layer", "2"} << "--age";
        QTest::newRow("format") << pos + QStringList{"--format", "xml"} << "--format";
        QTest::newRow("unknown flag") << pos + QStringList{"--radious", "3"} << "radious";
        QTest::newRow("head dim") << pos + QStringList{"--head-dim", "7"} << "--head-dim";
        QTest::newRow("sections") << pos + QStringList{"--mrope-section", "8,8,8"} << "--mrope-section";
        // Hostile numbers: refused with the flag named, never silent nan, wrapped sums or int64 overflow.
        QTest::newRow("radius huge") << pos + QStringList{"--radius", "1e308"} << "--radius: R must be above 0 and at most 1e6, got 1e+308";
        QTest::newRow("stride huge") << pos + QStringList{"--stride", "1e308"} << "--stride";
        QTest::newRow("sections wrap") << pos + QStringList{"--mrope-section", "2147483647,2147483647,66"} << "--mrope-section";
        QTest::newRow("seconds huge") << QStringList{"positions", "--scheme",          "mrope", "--layout", "video:3x2x2", "--temporal",
                                                     "qwen25vl",  "--second-per-grid", "1e308"}
                                      << "--second-per-grid";
        QTest::newRow("age pattern too long") << pos + QStringList{"--age", "CMCMC", "--layers", "4"} << "5 letters";
        QTest::newRow("alpha digits") << pos + QStringList{"--alpha", "1.0000001"} << "got 1.0000001";
        QTest::newRow("ptd too large") << QStringList{"ptd", "--scheme", "mrope", "--layout", "text:524288,image:512x1024"}
                                       << "the limit is 4294967296";
        QTest::newRow("render not png") << QStringList{"render", "--scheme", "mrope", "--layout", "text:2"} << "*.png";
        QTest::newRow("ptd no text") << QStringList{"ptd", "--scheme", "hard", "--layout", "image:2x2"} << "no text tokens";
        QTest::newRow("unknown command") << QStringList{"plot"} << "unknown command";
        QTest::newRow("bench suite") << QStringList{"bench", "gpu"} << "unknown suite";
    }
    void badInputExitsTwoWithOneLine()
    {
        QFETCH(QStringList, args);
        QFETCH(QString, mentions);
        QTemporaryDir dir;
        const QString out = dir.filePath("out.csv");
        const Run r = ropescope(args + QStringList{"--output", out});
        QCOMPARE(r.exitCode, 2);
        const QString err = QString::fromUtf8(r.err).trimmed();
        QVERIFY2(err.contains(mentions), qPrintable(err));
        if (args.first() != "plot")
            QVERIFY2(!err.contains('\n'), qPrintable(err));
        QVERIFY(!QFile::exists(out));
    }

    void unwritableOutputExitsOne()
    {
        const Run r = ropescope({"positions", "--scheme", "hard", "--layout", "text:2", "--output", "/nonexistent/dir/t.csv"});
        QCOMPARE(r.exitCode, 1);
        QVERIFY(r.err.contains("/nonexistent/dir/t.csv"));
    }

    void benchGeometryJson()
    {
        const Run r = ropescope({"bench", "geometry", "--json"});
        QCOMPARE(r.exitCode, 0);
        const QJsonArray rows = QJsonDocument::fromJson(r.out).array();
        QCOMPARE(rows.size(), 16); // 4 layouts x (positions, ptd, prior, crowding)
        for (const QJsonValue& v : rows) {
            const QJsonObject o = v.toObject();
            QVERIFY(!o["layout"].toString().isEmpty());
            QVERIFY(o["min_ms"].toDouble() > 0);
            QVERIFY(o["median_ms"].toDouble() >= o["min_ms"].toDouble());
        }
        QCOMPARE(rows[8].toObject()["tokens"].toInt(), 2048 + 4 * 1024);
    }

    void versionAndHelpNameTheCommand()
    {
        RopescopeRun r = runRopescope({"--version"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.startsWith("ropescope 0."), r.out.constData());
        r = runRopescope({"ptd", "--help"});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(r.out.startsWith("Usage: ropescope ptd [options]"), r.out.constData());
        r = runRopescope({"--help"});
        QVERIFY(r.out.contains("attention | bias"));
        // Every name stands apart from its text, and forward names every family it runs (issue 56 item 16: the
        // text read "check-positionscheck a ..." and forward's missed GLM-V and PaddleOCR-VL).
        const QString help = QString::fromUtf8(r.out);
        QVERIFY2(help.contains(QRegularExpression("\\n  check-positions  +check a training")), r.out.constData());
        QVERIFY2(
            help.contains(
                "run a checkpoint of a supported family (qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5, glm-v, paddleocr-vl, gemma3, gemma4)"),
            r.out.constData());
        // freqs writes JSON on standard output when asked, as positions does.
        r = runRopescope({"freqs", "--scheme", "mrope", "--layout", "text:2,image:2x2", "--format", "json"});
        QCOMPARE(r.exitCode, 0);
        QCOMPARE(QJsonDocument::fromJson(r.out).object()["allocation"].toString(), QString("sectioned[16,24,24]"));
        QCOMPARE(runRopescope({"freqs", "--scheme", "mrope", "--layout", "text:2,image:2x2", "--format", "xml"}).exitCode, 2);
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
