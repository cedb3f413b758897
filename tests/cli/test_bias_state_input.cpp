// `bias --merge` reads state files from anywhere (issue 40, M2): each is checked against what a measurement
// can write before anything is allocated, so a 25 KB file declaring a huge grid is refused at once in one
// line (exit 2, as every bad input file), nothing is written, and a merge never replaces one of its inputs.
#include "tests/support/run_ropescope.h"
#include "tests/support/test_files.h"

#include <QDir>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

#include <functional>

using Spoil = std::function<void(QJsonObject&)>;
Q_DECLARE_METATYPE(Spoil)

namespace {

constexpr double kFixed = 1099511627776.0; // 2^40: a sample's normalised map in fixed point

// A state of one scheme, layer 0, a 2x2 grid, holding the given samples (each map uniform) of a stream of `total`.
QJsonObject state(const QList<int>& samples, int total)
{
    QJsonArray cells;
    for (int map = 0; map < 2; ++map) {
        QJsonArray sums, stats;
        for (int k = 0; k < 4; ++k)
            sums.append(QString::number(static_cast<qint64>(samples.size()) * static_cast<qint64>(kFixed / 4)));
        for (int s : samples)
            stats.append(QJsonArray{QString::number(s), 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, -0.1, 0.2, 0.3, 0.1, 0.0, 0.0});
        cells.append(QJsonObject{{"map_sum", sums}, {"samples", stats}});
    }
    return QJsonObject{{"format", "ropescope bias state 1"},
                       {"model", "m"},
                       {"source", "s"},
                       {"schemes", QJsonArray{"own"}},
                       {"layers", QJsonArray{0}},
                       {"rows", 2},
                       {"cols", 2},
                       {"frames", 0},
                       {"keep_samples", false},
                       {"total", QString::number(total)},
                       {"cells", cells},
                       {"geometry", QJsonArray{QJsonObject{{"sample", "0"}, {"ptd", QJsonArray{0.1}}, {"prior_spread", QJsonArray{0.2}}}}}};
}

void writeState(const QString& folder, const QJsonObject& s)
{
    QDir().mkpath(folder);
    writeFile(folder + "/bias_state.json", QJsonDocument(s).toJson(QJsonDocument::Compact));
}

} // namespace

class TestBiasStateInput : public QObject {
    Q_OBJECT
private Q_SLOTS:
    // Two well-formed shards merge (the control: the checks pass what a measurement writes).
    void wellFormedShardsMerge()
    {
        QTemporaryDir dir;
        writeState(dir.filePath("a"), state({0}, 2));
        writeState(dir.filePath("b"), state({1}, 2));
        const auto r = runRopescope({"bias", "--merge", dir.filePath("a"), dir.filePath("b"), "--output", dir.filePath("out")}, false);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY2(r.err.contains("merged 2 of 2 samples"), r.err.constData());
        QVERIFY(QFile::exists(dir.filePath("out/bias_state.json")));
    }

    void badStatesAreOneLine_data()
    {
        QTest::addColumn<Spoil>("spoil");
        QTest::addColumn<QString>("expected");
        QTest::newRow("1000 schemes x 1000 layers on 1024x1024") << Spoil([](QJsonObject& s) {
            QJsonArray schemes, layers;
            for (int i = 0; i < 1000; ++i) {
                schemes.append(QString("s%1").arg(i));
                layers.append(i);
            }
            s["schemes"] = schemes;
            s["layers"] = layers;
            s["rows"] = 1024;
            s["cols"] = 1024;
        }) << "1 to 64 schemes";
        QTest::newRow("46341 x 46341 grid") << Spoil([](QJsonObject& s) {
            s["rows"] = 46341;
            s["cols"] = 46341;
        }) << "grid";
        QTest::newRow("declared cells missing") << Spoil([](QJsonObject& s) { s["layers"] = QJsonArray{0, 1, 2, 3}; }) << "cells: 2 for 8";
        QTest::newRow("NaN statistic") << Spoil([](QJsonObject& s) {
            QJsonArray cells = s["cells"].toArray();
            QJsonObject c = cells[0].toObject();
            QJsonArray samples = c["samples"].toArray();
            QJsonArray row = samples[0].toArray();
            row[1] = QJsonValue(QJsonValue::Null);
            samples[0] = row;
            c["samples"] = samples;
            cells[0] = c;
            s["cells"] = cells;
        }) << "statistics must be finite";
        QTest::newRow("negative sum") << Spoil([](QJsonObject& s) {
            QJsonArray cells = s["cells"].toArray();
            QJsonObject c = cells[1].toObject();
            QJsonArray sums = c["map_sum"].toArray();
            sums[2] = "-5";
            c["map_sum"] = sums;
            cells[1] = c;
            s["cells"] = cells;
        }) << "negative sum";
        QTest::newRow("sums that would wrap") << Spoil([](QJsonObject& s) {
            QJsonArray cells = s["cells"].toArray();
            QJsonObject c = cells[0].toObject();
            QJsonArray sums = c["map_sum"].toArray();
            sums[0] = "9223372036854775000";
            c["map_sum"] = sums;
            cells[0] = c;
            s["cells"] = cells;
        }) << "sums larger than 1 samples can give";
        QTest::newRow("sample outside the stream (merged 100002 of 4)")
            << Spoil([](QJsonObject& s) { s = state({100001}, 4); }) << "sample 100001 is outside the stream of 4";
        QTest::newRow("sample listed twice") << Spoil([](QJsonObject& s) { s = state({1, 1}, 4); }) << "a sample listed twice";
        QTest::newRow("layers out of order") << Spoil([](QJsonObject& s) { s["layers"] = QJsonArray{3, 1}; }) << "ascending";
    }
    void badStatesAreOneLine()
    {
        QFETCH(Spoil, spoil);
        QFETCH(QString, expected);
        QTemporaryDir dir;
        writeState(dir.filePath("a"), state({0}, 4));
        QJsonObject bad = state({1}, 4);
        spoil(bad);
        writeState(dir.filePath("b"), bad);
        QVERIFY(QFileInfo(dir.filePath("b/bias_state.json")).size() < 40000);
        QElapsedTimer timer;
        timer.start();
        const auto r = runRopescope({"bias", "--merge", dir.filePath("a"), dir.filePath("b"), "--output", dir.filePath("out")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains(expected.toUtf8()) && r.err.contains("bias_state.json"), r.err.constData());
        QCOMPARE(r.err.count('\n'), 1);
        QVERIFY(!QDir(dir.filePath("out")).exists());
        QVERIFY2(timer.elapsed() < 10000, qPrintable(QString::number(timer.elapsed())));
    }

    // --output naming one of the shards is refused before anything is read or written.
    void outputThatIsAnInputIsRefused()
    {
        QTemporaryDir dir;
        writeState(dir.filePath("a"), state({0}, 2));
        writeState(dir.filePath("b"), state({1}, 2));
        const QByteArray before = contents(dir.filePath("a/bias_state.json"));
        const auto r = runRopescope({"bias", "--merge", dir.filePath("a"), dir.filePath("b"), "--output", dir.filePath("a/.")}, false);
        QCOMPARE(r.exitCode, 2);
        QVERIFY2(r.err.contains("is one of the shards being merged"), r.err.constData());
        QCOMPARE(contents(dir.filePath("a/bias_state.json")), before);
    }
};

QTEST_GUILESS_MAIN(TestBiasStateInput)
#include "test_bias_state_input.moc"
