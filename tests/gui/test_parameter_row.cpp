// A scheme parameter is one row (issue 41): a one-number row and a choice row appended to the parameter table, for a parameter
// the struct does not have, shows up everywhere the table is read, with no other code: the CLI's flags, help,
// parsing and range check; the session codec, both ways; the panel, as a box with the row's words, range and
// default, applied, restored and enabled for the schemes that read it.
#include "app/cli/geometry_options.h"
#include "core/geometry/errors.h"
#include "core/geometry/scheme_parameters.h"
#include "core/io/scheme_codec.h"
#include "views/widgets/parameter_panel.h"

#include <QApplication>
#include <QComboBox>
#include <QCommandLineParser>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QJsonObject>
#include <QLabel>
#include <QSignalSpy>
#include <QtTest>

using namespace ropescope;
using geometry::SchemeKind;
using geometry::SchemeParameter;

namespace {

double gain = 3.0; // where the fake parameter's value lives (SchemeParams has no field for it)

const SchemeParameter kGain{"fake_gain",
                            "fake-gain",
                            "Fake gain",
                            "A parameter only this test has (default 3).",
                            "G",
                            SchemeParameter::Type::Number,
                            3.0,
                            0.0,
                            10.0,
                            10.0,
                            false,
                            "must be from 0 to 10",
                            [](SchemeKind k) { return k == SchemeKind::Circle; },
                            [](const geometry::SchemeParams&) { return gain; },
                            [](geometry::SchemeParams&, double v) { gain = v; },
                            [](const geometry::SchemeParams&, const geometry::SchemeParams&) { return true; },
                            [](geometry::SchemeParams&, const geometry::SchemeParams&) {}};

int mode = 0; // the fake choice's value: an index into kModes
const char* const kModes[] = {"soft", "hard", nullptr};

// A choice, the other kind of row a new parameter can be: its names are the row's.
const SchemeParameter kMode{"fake_mode",
                            "fake-mode",
                            "Fake mode",
                            "A choice only this test has: soft or hard (default soft).",
                            "M",
                            SchemeParameter::Type::Choice,
                            0,
                            0,
                            0,
                            0,
                            false,
                            "",
                            [](SchemeKind k) { return k == SchemeKind::Circle; },
                            [](const geometry::SchemeParams&) { return static_cast<double>(mode); },
                            [](geometry::SchemeParams&, double v) { mode = static_cast<int>(v); },
                            [](const geometry::SchemeParams&, const geometry::SchemeParams&) { return true; },
                            [](geometry::SchemeParams&, const geometry::SchemeParams&) {},
                            nullptr,
                            nullptr,
                            kModes};

QString helpText()
{
    QCommandLineParser parser;
    cli::addGeometryOptions(parser);
    return parser.helpText();
}

// The geometry flags' one-line refusal, or empty when they are taken (their values then set).
QString refusalOf(const QStringList& args)
{
    QCommandLineParser parser;
    cli::addGeometryOptions(parser);
    if (!parser.parse(QStringList{"ropescope"} + args))
        return parser.errorText();
    try {
        cli::parseGeometryOptions(parser);
    } catch (const std::exception& e) {
        return QString::fromUtf8(e.what());
    }
    return {};
}

} // namespace

class TestParameterRow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        geometry::appendSchemeParameter(kGain);
        geometry::appendSchemeParameter(kMode);
    }

    void theCliHasItsFlag()
    {
        QVERIFY2(helpText().contains("--fake-gain <G>") && helpText().contains("A parameter only this test has"), qPrintable(helpText()));
        QCOMPARE(refusalOf({"--scheme", "circle", "--layout", "text:2,image:2x2", "--fake-gain", "7.5"}), QString());
        QCOMPARE(gain, 7.5);
        const QString refused = refusalOf({"--scheme", "circle", "--layout", "text:2", "--fake-gain", "12"});
        QVERIFY2(refused.contains("fake-gain") && refused.contains("must be from 0 to 10"), qPrintable(refused));
        gain = 3.0;
    }

    void aChoiceRowHasItsFlagCodecAndCombo()
    {
        QVERIFY2(helpText().contains("--fake-mode <M>"), qPrintable(helpText()));
        QCOMPARE(refusalOf({"--scheme", "circle", "--layout", "text:2", "--fake-mode", "hard"}), QString());
        QCOMPARE(mode, 1);
        QCOMPARE(refusalOf({"--scheme", "circle", "--layout", "text:2", "--fake-mode", "loud"}),
                 QString("--fake-mode: expected soft or hard, got 'loud'"));

        QJsonObject o;
        io::writeSchemeParams(o, geometry::SchemeParams{});
        QCOMPARE(o["fake_mode"].toString(), QString("hard"));
        o["fake_mode"] = "soft";
        io::readSchemeParams(io::JsonFields(o, "session.json"));
        QCOMPARE(mode, 0);
        o["fake_mode"] = "loud";
        try {
            io::readSchemeParams(io::JsonFields(o, "session.json"));
            QFAIL("fake_mode loud was read");
        } catch (const geometry::InvalidInput& e) {
            QCOMPARE(QString(e.what()), QString("session.json: 'fake_mode' must be soft or hard"));
        }

        views::ParameterPanel panel;
        auto* combo = panel.findChild<QComboBox*>("param_fake_mode");
        QVERIFY(combo);
        QCOMPARE(combo->count(), 2);
        QCOMPARE(combo->itemText(1), QString("hard"));
        session::ExplorerState state;
        state.params.kind = SchemeKind::Circle;
        panel.setState(state);
        QVERIFY(combo->isEnabled());
        combo->setCurrentIndex(1);
        panel.applyTo(state);
        QCOMPARE(mode, 1);
        mode = 0;
        panel.setState(state);
        QCOMPARE(combo->currentIndex(), 0);
        state.params.kind = SchemeKind::Vrope;
        panel.setState(state);
        QVERIFY(!combo->isEnabled());
    }

    // Each built-in parameter has one control: its hand-made one, which sets it (seconds per grid had a second,
    // table-built box that overrode the one under "Video time").
    void aHandMadeControlIsTheOnlyOne()
    {
        views::ParameterPanel panel;
        for (const SchemeParameter& row : geometry::schemeParameters())
            if (QString(row.key) != "fake_gain" && QString(row.key) != "fake_mode")
                QVERIFY2(!panel.findChild<QWidget*>(QString("param_") + row.key), row.key);
        session::ExplorerState state;
        state.params.kind = SchemeKind::Mrope;
        state.params.temporal.mode = geometry::TemporalParams::Mode::Qwen25VL;
        panel.setState(state);
        // A hand-made box spans its row's valid range: R up to 1e6, as the CLI takes it (it stopped at 1e4).
        QCOMPARE(panel.findChild<QDoubleSpinBox*>("radius")->maximum(), geometry::findSchemeParameter("radius")->max);
        auto* secondPerGrid = panel.findChild<QDoubleSpinBox*>("secondPerGrid");
        QVERIFY(secondPerGrid && secondPerGrid->isEnabled());
        secondPerGrid->setValue(5);
        panel.applyTo(state);
        QCOMPARE(state.params.temporal.secondPerGrid, 5.0);
        state.params.temporal.mode = geometry::TemporalParams::Mode::Qwen2VL; // the frame index reads no seconds
        panel.setState(state);
        QVERIFY(!secondPerGrid->isEnabled());
    }

    void theCodecWritesAndReadsIt()
    {
        gain = 4.25;
        QJsonObject o;
        io::writeSchemeParams(o, geometry::SchemeParams{});
        QCOMPARE(o["fake_gain"].toDouble(), 4.25);
        o["fake_gain"] = 9.0;
        io::readSchemeParams(io::JsonFields(o, "session.json"));
        QCOMPARE(gain, 9.0);
        o["fake_gain"] = "loud";
        QVERIFY_THROWS_EXCEPTION(geometry::InvalidInput, io::readSchemeParams(io::JsonFields(o, "session.json")));
        gain = 3.0;
    }

    void thePanelHasABoxForIt()
    {
        views::ParameterPanel panel;
        auto* box = panel.findChild<QDoubleSpinBox*>("param_fake_gain");
        QVERIFY(box);
        QCOMPARE(box->minimum(), 0.0);
        QCOMPARE(box->maximum(), 10.0);
        QCOMPARE(box->value(), 3.0);
        bool labelled = false;
        for (const QLabel* label : panel.findChildren<QLabel*>())
            labelled = labelled || (label->text() == "Fake gain" && label->buddy() == box);
        QVERIFY(labelled);

        session::ExplorerState state;
        state.params.kind = SchemeKind::Circle;
        panel.setState(state);
        QVERIFY(box->isEnabled());
        QSignalSpy edited(&panel, &views::ParameterPanel::stateEdited);
        box->setValue(6.0);
        QVERIFY(!edited.isEmpty());
        panel.applyTo(state);
        QCOMPARE(gain, 6.0);

        gain = 2.0; // a state restored (undo, a session): the box shows its value
        panel.setState(state);
        QCOMPARE(box->value(), 2.0);

        state.params.kind = SchemeKind::Mrope; // a scheme that does not read it
        panel.setState(state);
        QVERIFY(!box->isEnabled());
    }
};

QTEST_MAIN(TestParameterRow)
#include "test_parameter_row.moc"
