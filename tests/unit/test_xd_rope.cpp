// The xd-rope scheme against golden data recomputed outside RopeScope from HunyuanVL's code paths
// (tests/data/xdrope/make_reference.py: vLLM's get_xdrope_input_positions and the xdrope_section split): positions
// of every token with the newline column on each layout, which axis and frequency each dim carries, and the
// NTK-alpha base. Then what RopeScope adds: the same axes on the layout's own tokens (as a model runs it).
#include "tests/support/test_paths.h"
#include "core/geometry/errors.h"
#include "core/geometry/scheme.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <cmath>

using namespace ropescope::geometry;

namespace {

QJsonObject reference()
{
    QFile f(ROPESCOPE_TEST_DATA + "/xdrope/reference.json");
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
}

PositionTable tableFor(const std::string& layout, bool newlines = true)
{
    SchemeParams p = defaultSchemeParams(SchemeKind::XdRope);
    p.newlineColumn = newlines;
    return buildPositionTable(parseLayout(layout), p);
}

} // namespace

class TestXdRope : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void positionsEqualTheReference_data()
    {
        QTest::addColumn<QString>("name");
        const QJsonObject cases = reference()["cases"].toObject();
        QVERIFY(cases.size() == 5);
        for (const QString& name : cases.keys())
            QTest::newRow(qPrintable(name)) << name;
    }
    void positionsEqualTheReference()
    {
        QFETCH(QString, name);
        const QJsonObject c = reference()["cases"].toObject()[name].toObject();
        const PositionTable t = tableFor(c["layout"].toString().toStdString());
        const QJsonArray rows = c["positions"].toArray();
        QCOMPARE(t.components(), 4);
        QCOMPARE(t.componentLabels(), (std::vector<std::string>{"p", "w", "h", "t"}));
        QCOMPARE(t.size(), c["input_ids"].toArray().size()); // H(W+1)+2 tokens per span
        for (int axis = 0; axis < 4; ++axis)
            for (int i = 0; i < t.size(); ++i)
                QVERIFY2(t.positions(i, axis) == rows[axis].toArray()[i].toDouble(),
                         qPrintable(QString("axis %1 token %2: %3, reference %4")
                                        .arg(axis)
                                        .arg(i)
                                        .arg(t.positions(i, axis))
                                        .arg(rows[axis].toArray()[i].toDouble())));
        // The image tokens of the ids are the visual tokens and the begin/end RopeScope counts as text.
        const QJsonArray ids = c["input_ids"].toArray();
        for (const VisualBlock& b : t.blocks)
            for (int i = b.begin - 1; i <= b.end(); ++i)
                QCOMPARE(ids[i].toInt(), 120120);
    }

    // Pair j turns dims (j, j + 64); frequencies 0-15 follow p, 16-31 w, 32-47 h, 48-63 t, at theta * alpha^(128/126).
    void rotaryEqualsTheReference()
    {
        const QJsonObject r = reference()["rotary"].toObject();
        const SchemeParams p = defaultSchemeParams(SchemeKind::XdRope);
        QCOMPARE(p.rotary.theta, r["theta"].toDouble());
        QCOMPARE(p.ntkAlpha, r["alpha"].toDouble());
        QCOMPARE(p.rotary.pairing, RotaryPairing::Half);
        const FrequencyAllocation a = allocationFor(p);
        QVERIFY2(a.toString().rfind("sectioned[16,16,16,16] theta x", 0) == 0, a.toString().c_str());
        const double base = r["base"].toDouble();
        QVERIFY(std::abs(p.rotary.theta * a.thetaScale / base - 1) < 1e-12);
        const QJsonArray dims = r["dims"].toArray();
        QCOMPARE(dims.size(), 128);
        for (const QJsonValue& v : dims) {
            const QJsonObject d = v.toObject();
            const int dim = d["dim"].toInt(), j = d["frequency"].toInt();
            const auto [first, second] = p.rotary.pairDims(j);
            QVERIFY(dim == first || dim == second);
            QCOMPARE(a.componentOf(j), d["axis"].toInt());
        }
        const std::vector<RotaryChannel> channels = rotaryChannels(p.rotary, a);
        for (const RotaryChannel& ch : channels)
            QVERIFY(std::abs(ch.invFreq / std::pow(base, -2.0 * ch.pair / 128) - 1) < 1e-12);
        // alpha 1 keeps theta.
        SchemeParams plain = p;
        plain.ntkAlpha = 1;
        QCOMPARE(allocationFor(plain).thetaScale, 1.0);
    }

    // Without the newline column (a model's own tokens): the layout's tokens, the grid's axes unchanged.
    void withoutTheNewlineColumnTheGridKeepsItsAxes()
    {
        const std::string layout = "text:3,image:2x3,text:4,video:2x2x2,text:2";
        const PositionTable withNewlines = tableFor(layout), plain = tableFor(layout, false);
        QCOMPARE(static_cast<long long>(plain.size()), parseLayout(layout).tokenCount());
        QCOMPARE(withNewlines.size(), 3 + (2 * 4 + 2) + 4 + 2 * (2 * 3 + 2) + 2);
        QCOMPARE(plain.blocks.size(), withNewlines.blocks.size());
        for (size_t b = 0; b < plain.blocks.size(); ++b) {
            const VisualBlock &x = plain.blocks[b], &y = withNewlines.blocks[b];
            QCOMPARE(y.cols, x.cols + 1);
            QCOMPARE(x.frame, y.frame);
            for (int r = 0; r < x.rows; ++r)
                for (int c = 0; c < x.cols; ++c)
                    for (int axis = 1; axis < 4; ++axis)
                        QCOMPARE(plain.positions(x.begin + r * x.cols + c, axis), withNewlines.positions(y.begin + r * y.cols + c, axis));
            for (int i = x.begin; i < x.end(); ++i)
                QCOMPARE(plain.positions(i, 0), double(i));   // p: the plain index
            QCOMPARE(plain.positions(x.begin, 3), double(b)); // t: the span's number (image 0, frames 1 and 2)
        }
        for (int i : plain.textTokens)
            QVERIFY((plain.positions.row(i).array() == double(i)).all());
    }

    // A multi-frame video placed as one grid (--video grid): one begin and end around its frames, t = span + frame.
    void aVideoAsOneGridHasOneBeginAndEnd()
    {
        SchemeParams p = defaultSchemeParams(SchemeKind::XdRope);
        p.videoForm = VideoForm::Grid;
        const PositionTable t = buildPositionTable(parseLayout("text:2,video:3x2x2,text:2"), p);
        QCOMPARE(t.size(), 2 + 1 + 3 * 2 * 3 + 1 + 2);
        for (int f = 0; f < 3; ++f)
            QCOMPARE(t.positions(t.blocks[static_cast<size_t>(f)].begin, 3), double(f));
    }

    void badValuesAreNamed()
    {
        SchemeParams p = defaultSchemeParams(SchemeKind::XdRope);
        p.ntkAlpha = 0.5;
        try {
            validate(p);
            QFAIL("accepted alpha 0.5");
        } catch (const InvalidInput& e) {
            QCOMPARE(e.parameter(), std::string("ntk_alpha"));
        }
        p = defaultSchemeParams(SchemeKind::XdRope);
        p.rotary.headDim = 2;
        QVERIFY_THROWS_EXCEPTION(InvalidInput, validate(p));
    }
};

QTEST_GUILESS_MAIN(TestXdRope)
#include "test_xd_rope.moc"
