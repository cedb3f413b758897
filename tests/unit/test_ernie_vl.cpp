// The ernie-vl scheme against golden data recomputed outside RopeScope from ERNIE-4.5-VL's own code paths
// (tests/data/ernie/make_reference.py: transformers' get_rope_index with the fixed get_vision_position_ids, and
// the rotary's pre-rotation and recomposition_to_3d): positions on every layout, and which axis and frequency
// each pair of dims carries.
#include "tests/support/test_paths.h"
#include "core/geometry/errors.h"
#include "core/geometry/scheme.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

using namespace ropescope::geometry;

namespace {

QJsonObject reference()
{
    QFile f(ROPESCOPE_TEST_DATA + "/ernie/reference.json");
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
}

} // namespace

class TestErnieVl : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void positionsEqualTheReference_data()
    {
        QTest::addColumn<QString>("name");
        const QJsonObject cases = reference()["cases"].toObject();
        QVERIFY(cases.size() == 6);
        for (const QString& name : cases.keys())
            QTest::newRow(qPrintable(name)) << name;
    }
    void positionsEqualTheReference()
    {
        QFETCH(QString, name);
        const QJsonObject c = reference()["cases"].toObject()[name].toObject();
        const PositionTable t =
            buildPositionTable(parseLayout(c["layout"].toString().toStdString()), defaultSchemeParams(SchemeKind::ErnieVl));
        const QJsonArray rows = c["positions"].toArray();
        QCOMPARE(t.components(), 3);
        QCOMPARE(t.size(), rows[0].toArray().size());
        for (int axis = 0; axis < 3; ++axis)
            for (int i = 0; i < t.size(); ++i)
                QVERIFY2(t.positions(i, axis) == rows[axis].toArray()[i].toDouble(),
                         qPrintable(QString("axis %1 token %2: %3, reference %4")
                                        .arg(axis)
                                        .arg(i)
                                        .arg(t.positions(i, axis))
                                        .arg(rows[axis].toArray()[i].toDouble())));
        QCOMPARE(static_cast<int>(t.positions.maxCoeff()) + 1 - t.size(), c["rope_deltas"].toInt());
    }

    // Dims (2j, 2j+1) carry frequency j (adjacent pairs); j < 44 alternates h (even) and w (odd), the 20 lowest
    // carry t: hw-interleaved [20, 22, 22] at head_dim 128, with ERNIE's theta.
    void rotaryEqualsTheReference()
    {
        const SchemeParams p = defaultSchemeParams(SchemeKind::ErnieVl);
        QCOMPARE(p.rotary.pairing, RotaryPairing::Adjacent);
        QCOMPARE(p.rotary.theta, 5e5);
        const FrequencyAllocation a = allocationFor(p);
        QCOMPARE(a.toString(), std::string("hw-interleaved[20,22,22]"));
        const QJsonArray dims = reference()["rotary"].toObject()["dims"].toArray();
        QCOMPARE(dims.size(), 128);
        for (const QJsonValue& v : dims) {
            const QJsonObject d = v.toObject();
            const int dim = d["dim"].toInt(), j = d["frequency"].toInt();
            const auto [first, second] = p.rotary.pairDims(j);
            QVERIFY2(dim == first || dim == second, qPrintable(QString("dim %1 is not in frequency %2's pair").arg(dim).arg(j)));
            QCOMPARE(a.componentOf(j), d["axis"].toInt());
        }
        // Other head sizes keep the design: t takes the 20/64 lowest, h and w alternate above.
        SchemeParams small = p;
        small.rotary.headDim = 64;
        QCOMPARE(allocationFor(small).toString(), std::string("hw-interleaved[10,11,11]"));
        small.sections = {10, 12, 10};
        try {
            validate(small);
            (void)allocationFor(small);
            QFAIL("accepted sections that do not alternate");
        } catch (const InvalidInput& e) {
            QVERIFY2(QString(e.what()).contains("h must be 11 and w 11"), e.what());
        }
    }
};

QTEST_GUILESS_MAIN(TestErnieVl)
#include "test_ernie_vl.moc"
