// The scheme parameter table (core/geometry/scheme_parameters.h) against the struct it describes: every row's
// value is seen by operator==, survives the session codec, is range-checked by validate (Number rows), and is
// reset by placementParams exactly for the schemes that do not read it; and every key the codec writes is a row
// or a rotary/common setting, so a parameter added without a row fails here.
#include "core/geometry/errors.h"
#include "core/geometry/scheme_parameters.h"
#include "core/io/scheme_codec.h"

#include <QJsonObject>
#include <QSet>
#include <QtTest>

#include <map>

using namespace ropescope;
using namespace ropescope::geometry;

namespace {

// A value other than the default, inside the range, for each row, by its type; with the setting that makes
// the scheme read it (seconds per grid: the Qwen2.5-VL time index).
SchemeParams changed(const SchemeParameter& row, SchemeKind kind)
{
    SchemeParams p = defaultSchemeParams(kind);
    if (row.onlyWhen && !row.onlyWhen(p))
        p.temporal.mode = TemporalParams::Mode::Qwen25VL; // the one such setting in the table
    switch (row.type) {
    case SchemeParameter::Type::Number:
        row.set(p, row.get(p) == row.max ? row.min + (row.max - row.min) / 4 : std::min(row.max, row.get(p) + 0.25));
        break;
    case SchemeParameter::Type::Choice: {
        int count = 0;
        while (row.choices[count])
            ++count;
        row.set(p, (static_cast<int>(row.get(p)) + 1) % count);
        break;
    }
    case SchemeParameter::Type::Flag: row.set(p, row.get(p) != 0 ? 0 : 1); break;
    case SchemeParameter::Type::Vector: row.setVector(p, {1, 2, 3}); break;
    }
    return p;
}

// A scheme that reads the row and one that does not.
std::pair<SchemeKind, SchemeKind> readerAndNot(const SchemeParameter& row)
{
    std::optional<SchemeKind> reader, other;
    for (SchemeKind k : allSchemes())
        (row.reads(k) ? reader : other) = (row.reads(k) ? reader : other).value_or(k);
    return {reader.value(), other.value()};
}

} // namespace

class TestSchemeParameters : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void rowsAreUniqueAndReadBySomeScheme()
    {
        QSet<QString> keys, flags;
        for (const SchemeParameter& row : schemeParameters()) {
            QVERIFY2(!keys.contains(row.key), row.key);
            keys.insert(row.key);
            QVERIFY(findSchemeParameter(row.key) == &row);
            if (*row.help) { // a flag of its own, from the row
                QVERIFY2(!flags.contains(row.flag), row.flag);
                flags.insert(row.flag);
                QVERIFY2(*row.valueName, row.key);
            }
            if (row.type == SchemeParameter::Type::Number || row.type == SchemeParameter::Type::Vector)
                QVERIFY2(row.min < row.max && row.min <= row.sliderMax && row.sliderMax <= row.max, row.key);
            if (row.type == SchemeParameter::Type::Number) {
                QVERIFY2(*row.rangeText || !*row.help, row.key); // a range message, or validate's own (radius)
            }
            QVERIFY2((row.type == SchemeParameter::Type::Vector) == (row.getVector && row.setVector && !row.get), row.key);
            QVERIFY2((row.type == SchemeParameter::Type::Choice) == (row.choices != nullptr), row.key);
            QVERIFY2(*row.label, row.key);
            const auto [reader, other] = readerAndNot(row);
            QVERIFY(row.reads(reader) && !row.reads(other));
        }
        QVERIFY(!findSchemeParameter("theta")); // a rotary setting, not a scheme parameter
        const SchemeParameter& ntkAlpha = *findSchemeParameter("ntk_alpha");
        QVERIFY(ntkAlpha.reads(SchemeKind::XdRope) && !ntkAlpha.reads(SchemeKind::Circle));
    }

    // Qwen2-VL's time index is the frame number: M-RoPE reads seconds per grid only under Qwen2.5-VL's. So the
    // position table's metadata, the PTD cache key and the window's enable rules leave it out there.
    void aRowCanDependOnAnotherSetting()
    {
        const SchemeParameter& spg = *findSchemeParameter("second_per_grid");
        SchemeParams p = defaultSchemeParams(SchemeKind::Mrope);
        p.temporal.secondPerGrid = 4;
        QVERIFY(spg.reads(SchemeKind::Mrope) && !reads(spg, p));
        QCOMPARE(placementParams(p).temporal.secondPerGrid, SchemeParams{}.temporal.secondPerGrid);
        p.temporal.mode = TemporalParams::Mode::Qwen25VL;
        QVERIFY(reads(spg, p));
        QCOMPARE(placementParams(p).temporal.secondPerGrid, 4.0);
        p.custom = CustomSchemeRef{};
        QVERIFY(!reads(spg, p)); // a scheme file reads none of the built-ins' parameters
    }

    // The names, values and spans as a person reads them.
    void valuesInWords()
    {
        SchemeParams p = defaultSchemeParams(SchemeKind::Circle);
        p.circle.radiusMode = RadiusMode::AutoCode;
        QCOMPARE(valueText(*findSchemeParameter("radius_mode"), p), std::string("code-auto"));
        QCOMPARE(choiceList(*findSchemeParameter("radius_mode")), std::string("fixed, auto or code-auto"));
        QCOMPARE(choiceIndex(*findSchemeParameter("temporal"), "qwen25vl"), std::optional<double>(1));
        QVERIFY(!choiceIndex(*findSchemeParameter("temporal"), "qwen3vl"));
        QCOMPARE(valueText(*findSchemeParameter("text_vector"), p), std::string("1,1,1"));
        p.newlineColumn = false;
        QCOMPARE(valueText(*findSchemeParameter("newline_column"), p), std::string("off"));
        // A slider spans the row's usual range, widened to hold the value; from 0.01 where 0 is not valid.
        QCOMPARE(sliderSpan(*findSchemeParameter("radius"), 10), std::make_pair(0.01, 1000.0));
        QCOMPARE(sliderSpan(*findSchemeParameter("radius"), 5000), std::make_pair(0.01, 5000.0));
        QCOMPARE(sliderSpan(*findSchemeParameter("alpha"), 0.5), std::make_pair(0.0, 1.0));
    }

    void everyRowIsTheStructsField_data()
    {
        QTest::addColumn<QString>("key");
        for (const SchemeParameter& row : schemeParameters())
            QTest::newRow(row.key) << QString(row.key);
    }
    void everyRowIsTheStructsField()
    {
        QFETCH(QString, key);
        const SchemeParameter& row = *findSchemeParameter(key.toStdString());
        const auto [reader, other] = readerAndNot(row);
        const SchemeParams base = defaultSchemeParams(reader), moved = changed(row, reader);
        QVERIFY(!row.equal(base, moved));
        QVERIFY(!(base == moved)); // operator== sees the field
        validate(moved);
        // The session codec keeps it.
        QJsonObject o;
        io::writeSchemeParams(o, moved);
        const SchemeParams read = io::readSchemeParams(io::JsonFields(o, "test"));
        QVERIFY2(row.equal(read, moved), qPrintable(key));
        // copy restores the default.
        SchemeParams restored = moved;
        row.copy(restored, base);
        QVERIFY(row.equal(restored, base));
        // placementParams keeps it for a scheme that reads it, resets it for one that does not.
        QVERIFY(row.equal(placementParams(moved), moved));
        SchemeParams elsewhere = changed(row, other);
        QVERIFY(row.equal(placementParams(elsewhere), defaultSchemeParams(other)));
        // Out of range, a Number row's value is named by its key.
        if (row.type == SchemeParameter::Type::Number) {
            SchemeParams bad = base;
            row.set(bad, row.max * 2 + 1);
            try {
                validate(bad);
                QFAIL("accepted a value above the range");
            } catch (const InvalidInput& e) {
                QCOMPARE(e.parameter(), std::string(row.key));
                QVERIFY2(QString(e.what()).contains(row.rangeText), e.what());
            }
        }
    }

    // Every key the session codec writes is a row, or one of the settings that are not scheme parameters. A
    // parameter written to sessions without a row fails here.
    void theCodecWritesNoParameterWithoutARow()
    {
        const QSet<QString> notParameters{"scheme",   "theta",      "head_dim", "partial_rotary", "pairing",
                                          "kv_heads", "allocation", "sections", "video_form",     "scheme_file"};
        for (SchemeKind k : allSchemes()) {
            SchemeParams p = defaultSchemeParams(k);
            p.temporalStride = 1.5;
            p.videoForm = VideoForm::Grid;
            p.rotary.partial = 0.5;
            p.rotary.pairing = p.rotary.pairing == RotaryPairing::Half ? RotaryPairing::Adjacent : RotaryPairing::Half;
            QJsonObject o;
            io::writeSchemeParams(o, p);
            for (const QString& key : o.keys())
                QVERIFY2(notParameters.contains(key) || findSchemeParameter(key.toStdString()), qPrintable(key + " has no row"));
        }
    }
};

QTEST_GUILESS_MAIN(TestSchemeParameters)
#include "test_scheme_parameters.moc"
