// Render tests: `ropescope render` (headless, EGL) against baseline PNGs in tests/baselines, compared
// with vtkImageDifference. On failure the new image and a diff image are written to render-failures/ in
// the build directory. ROPESCOPE_UPDATE_BASELINES=1 rewrites the baselines (review them before committing).
#include "tests/support/test_paths.h"
#include <QDir>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <vtkImageData.h>
#include <vtkImageDifference.h>
#include <vtkNew.h>
#include <vtkPNGReader.h>
#include <vtkPNGWriter.h>

namespace {

const QString kBaselines = ROPESCOPE_TEST_DATA + "/../baselines";

struct Comparison {
    double error = 1e9;
    bool sizeMatches = false;
};

Comparison compare(const QString& image, const QString& baseline, const QString& diffPath = {})
{
    vtkNew<vtkPNGReader> a, b;
    a->SetFileName(qPrintable(image));
    b->SetFileName(qPrintable(baseline));
    a->Update();
    b->Update();
    Comparison c;
    int da[3], db[3];
    a->GetOutput()->GetDimensions(da);
    b->GetOutput()->GetDimensions(db);
    c.sizeMatches = da[0] == db[0] && da[1] == db[1];
    if (!c.sizeMatches)
        return c;
    vtkNew<vtkImageDifference> diff;
    diff->SetInputConnection(a->GetOutputPort());
    diff->SetImageConnection(b->GetOutputPort());
    diff->SetThreshold(16); // per-channel difference tolerated before a pixel counts as different
    diff->Update();
    c.error = diff->GetThresholdedError();
    if (!diffPath.isEmpty()) {
        vtkNew<vtkPNGWriter> w;
        w->SetInputConnection(diff->GetOutputPort());
        w->SetFileName(qPrintable(diffPath));
        w->Write();
    }
    return c;
}

constexpr double kMaxError = 4.0;

} // namespace

class TestRender : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchesBaseline_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QStringList>("args");
        const QStringList layout{"--layout", "text:4,image:8x8,text:6"};
        QTest::newRow("circle") << "circle" << (QStringList{"--scheme", "circle", "--cone", "--labels"} + layout);
        QTest::newRow("circle_axis") << "circle_axis" << (QStringList{"--scheme", "circle", "--camera", "axis"} + layout);
        QTest::newRow("mrope") << "mrope" << (QStringList{"--scheme", "mrope", "--labels"} + layout);
        QTest::newRow("hard") << "hard" << (QStringList{"--scheme", "hard"} + layout);
        QTest::newRow("vrope") << "vrope" << (QStringList{"--scheme", "vrope", "--colour", "distance"} + layout);
        QTest::newRow("multi_image") << "multi_image"
                                     << QStringList{"--scheme", "circle", "--layout", "text:3,image:4x4,text:2,image:4x4,text:3"};
        QTest::newRow("video") << "video" << QStringList{"--scheme", "circle", "--layout", "text:2,video:3x4x4,text:2",
                                                         "--stride", "4",      "--camera", "side"};
    }
    void matchesBaseline()
    {
        QFETCH(QString, name);
        QFETCH(QStringList, args);
        QTemporaryDir dir;
        const QString out = dir.filePath(name + ".png");
        QProcess p;
        p.start(ROPESCOPE_BINARY, QStringList{"render", "--resolution", "480x360", "--output", out} + args);
        QVERIFY(p.waitForFinished(120000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());

        const QString baseline = QDir(kBaselines).filePath(name + ".png");
        if (qEnvironmentVariable("ROPESCOPE_UPDATE_BASELINES") == "1") {
            QFile::remove(baseline);
            QVERIFY(QFile::copy(out, baseline));
            QSKIP("baseline rewritten");
        }
        QVERIFY2(QFile::exists(baseline), qPrintable("missing baseline " + baseline));
        QDir().mkpath("render-failures");
        const QString diffPath = QDir("render-failures").absoluteFilePath(name + "-diff.png");
        const Comparison c = compare(out, baseline, diffPath);
        if (!c.sizeMatches || c.error > kMaxError) {
            const QString kept = QDir("render-failures").absoluteFilePath(name + ".png");
            QFile::remove(kept);
            QFile::copy(out, kept);
            QFAIL(qPrintable(QString("%1: error %2 > %3 (size match %4); new image %5, diff %6")
                                 .arg(name)
                                 .arg(c.error)
                                 .arg(kMaxError)
                                 .arg(c.sizeMatches)
                                 .arg(kept, diffPath)));
        }
        QFile::remove(diffPath);
    }

    // The comparison must be able to fail: different schemes are far apart.
    void comparisonDetectsDifferences()
    {
        const QDir b(kBaselines);
        const Comparison c = compare(b.filePath("circle.png"), b.filePath("mrope.png"));
        QVERIFY(c.sizeMatches);
        QVERIFY2(c.error > 10 * kMaxError, qPrintable(QString::number(c.error)));
    }

    void pngRecordsParameters()
    {
        QTemporaryDir dir;
        const QString out = dir.filePath("meta.png");
        QProcess p;
        p.start(ROPESCOPE_BINARY,
                {"render", "--scheme", "circle", "--layout", "text:2,image:3x3,text:2", "--alpha", "0.3", "--resolution", "64x48",
                 "--output", out});
        QVERIFY(p.waitForFinished(60000));
        QCOMPARE(p.exitCode(), 0);
        QImage image(out);
        QCOMPARE(image.size(), QSize(64, 48));
        const QString meta = image.text("ropescope");
        QVERIFY2(meta.contains("\"alpha\":0.3") && meta.contains("text:2,image:3x3,text:2"), qPrintable(meta));
    }
};

QTEST_GUILESS_MAIN(TestRender)
#include "test_render.moc"
