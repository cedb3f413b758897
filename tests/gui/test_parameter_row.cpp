// A scheme parameter is one row (issue 41): a one-number row appended to the parameter table, for a parameter
// the struct does not have, shows up everywhere the table is read, with no other code: the CLI's flags, help,
// parsing and range check; the session codec, both ways; the panel, as a box with the row's words, range and
// default, applied, restored and enabled for the schemes that read it.
#include "app/cli/geometry_options.h"
#include "core/geometry/errors.h"
#include "core/geometry/scheme_parameters.h"
#include "core/io/scheme_codec.h"
#include "views/widgets/parameter_panel.h"

#include <QApplication>
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
                            false,
                            "must be from 0 to 10",
                            [](SchemeKind k) { return k == SchemeKind::Circle; },
                            [](const geometry::SchemeParams&) { return gain; },
                            [](geometry::SchemeParams&, double v) { gain = v; },
                            [](const geometry::SchemeParams&, const geometry::SchemeParams&) { return true; },
                            [](geometry::SchemeParams&, const geometry::SchemeParams&) {}};

} // namespace

class TestParameterRow : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void initTestCase() { geometry::appendSchemeParameter(kGain); }

    void theCliHasItsFlag()
    {
        QCommandLineParser parser;
        cli::addGeometryOptions(parser);
        QVERIFY2(parser.helpText().contains("--fake-gain <G>") && parser.helpText().contains("A parameter only this test has"),
                 qPrintable(parser.helpText()));
        QVERIFY(parser.parse({"ropescope", "--scheme", "circle", "--layout", "text:2,image:2x2", "--fake-gain", "7.5"}));
        cli::parseGeometryOptions(parser);
        QCOMPARE(gain, 7.5);
        QCommandLineParser bad;
        cli::addGeometryOptions(bad);
        QVERIFY(bad.parse({"ropescope", "--scheme", "circle", "--layout", "text:2", "--fake-gain", "12"}));
        try {
            cli::parseGeometryOptions(bad);
            QFAIL("--fake-gain 12 was accepted");
        } catch (const std::exception& e) {
            QVERIFY2(QString(e.what()).contains("fake-gain") && QString(e.what()).contains("must be from 0 to 10"), e.what());
        }
        gain = 3.0;
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
