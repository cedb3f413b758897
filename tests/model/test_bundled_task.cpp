// The synthetic task and the trainer: determinism, masks, a short training run that learns and writes a
// model the normal loader reads.
#include <QDir>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "core/model/analysis/evaluator.h"
#include "core/model/engine/vlm.h"
#include "core/model/training/synthetic_task.h"
#include "core/model/training/trainer.h"

#include <torch/types.h>
#endif

using namespace ropescope;
using namespace ropescope::model;

class TestBundledTask : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void generatorIsDeterministic()
    {
        for (uint64_t i = 0; i < 20; ++i) {
            const SyntheticSample a = SyntheticTask::sample(5, i), b = SyntheticTask::sample(5, i);
            QCOMPARE(a.image, b.image); // same bytes
            QCOMPARE(a.question, b.question);
            QCOMPARE(a.answer, b.answer);
            QCOMPARE(a.mask, b.mask);
        }
        QVERIFY(SyntheticTask::sample(5, 0).image != SyntheticTask::sample(6, 0).image);
        QVERIFY(SyntheticTask::sample(5, 0).image != SyntheticTask::sample(5, 1).image);
    }

    void samplesAreWellFormed()
    {
        QMap<QString, int> types;
        for (uint64_t i = 0; i < 500; ++i) {
            const SyntheticSample s = SyntheticTask::sample(11, i);
            QCOMPARE(s.image.size(), QSize(224, 224));
            QVERIFY(SyntheticTask::answers().contains(s.answer));
            QVERIFY(!s.question.isEmpty());
            ++types[s.type];
            // Every masked cell holds a drawn object: its centre pixel is not the background.
            int cells = 0;
            for (int c = 0; c < 64; ++c) {
                if (!s.mask[static_cast<size_t>(c)])
                    continue;
                ++cells;
                const int x = (c % 8) * 28 + 14, y = (c / 8) * 28 + 14;
                QVERIFY2(s.image.pixelColor(x, y) != SyntheticTask::background(x, y), qPrintable(s.question));
            }
            QVERIFY(cells >= 1);
            // The cell-naming targets: a colour and a shape exactly where something is drawn.
            for (int c = 0; c < 64; ++c) {
                const int x = (c % 8) * 28 + 14, y = (c / 8) * 28 + 14;
                const bool drawn = s.image.pixelColor(x, y) != SyntheticTask::background(x, y);
                QCOMPARE(s.cellColour[static_cast<size_t>(c)] >= 0, drawn);
                QCOMPARE(s.cellShape[static_cast<size_t>(c)] >= 0, drawn);
                if (s.mask[static_cast<size_t>(c)])
                    QVERIFY(drawn);
            }
            if (s.type == "where") { // the answer is the quadrant of the one masked cell
                const int cell = static_cast<int>(std::find(s.mask.begin(), s.mask.end(), true) - s.mask.begin());
                QCOMPARE(cells, 1);
                QCOMPARE(s.answer, SyntheticTask::quadrants()[SyntheticTask::quadrantOf(cell / 8, cell % 8)]);
                QCOMPARE(s.answer.startsWith("top"), cell < 32);
                QCOMPARE(s.answer.endsWith("left"), cell % 8 < 4);
            }
            if (s.type == "relation") { // the object asked about and its neighbour: two cells side by side
                QCOMPARE(cells, 2);
                const int first = static_cast<int>(std::find(s.mask.begin(), s.mask.end(), true) - s.mask.begin());
                QVERIFY((first % 8 < 7 && s.mask[static_cast<size_t>(first + 1)]) ||
                        (first < 56 && s.mask[static_cast<size_t>(first + 8)]));
            }
            if (s.type == "count")
                QCOMPARE(cells, SyntheticTask::answers().indexOf(s.answer) - 12); // one..six follow 13 answers
        }
        for (const QString& t : SyntheticTask::questionTypes())
            QVERIFY2(types.value(t) > 30, qPrintable(t)); // every question type occurs
    }

    // The second test set and the training augmentation draw the same objects otherwise: the same question,
    // answer, mask and cell targets as the grid's picture; something saturated in every occupied cell and
    // nothing but background in the middle of every empty one (objects reach up to 12 px into a neighbour).
    void otherRenderingsDrawTheSameObjects()
    {
        auto saturated = [](const QImage& image, int cell, int inset) {
            const int x0 = (cell % 8) * 28 + inset, y0 = (cell / 8) * 28 + inset;
            for (int y = y0; y < y0 + 28 - 2 * inset; ++y)
                for (int x = x0; x < x0 + 28 - 2 * inset; ++x) {
                    const QColor c = image.pixelColor(x, y);
                    if (std::min({c.red(), c.green(), c.blue()}) < 150)
                        return true;
                }
            return false;
        };
        for (Rendering r : {Rendering::Varied, Rendering::Drawn}) {
            QCOMPARE(renderingFromName(renderingName(r)), std::optional<Rendering>(r));
            for (uint64_t i = 0; i < 60; ++i) {
                const SyntheticSample grid = SyntheticTask::sample(21, i), other = SyntheticTask::sample(21, i, r);
                QCOMPARE(other.question, grid.question);
                QCOMPARE(other.answer, grid.answer);
                QCOMPARE(other.mask, grid.mask);
                QCOMPARE(other.cellColour, grid.cellColour);
                QCOMPARE(other.cellShape, grid.cellShape);
                QCOMPARE(other.image.size(), QSize(224, 224));
                QVERIFY(other.image != grid.image);
                QCOMPARE(SyntheticTask::sample(21, i, r).image, other.image); // deterministic
                for (int c = 0; c < 64; ++c) {
                    if (other.cellColour[static_cast<size_t>(c)] >= 0)
                        QVERIFY2(saturated(other.image, c, 0),
                                 qPrintable(QString("%1 sample %2 cell %3").arg(renderingName(r)).arg(i).arg(c)));
                    else
                        QVERIFY2(!saturated(other.image, c, 13),
                                 qPrintable(QString("%1 sample %2 cell %3").arg(renderingName(r)).arg(i).arg(c)));
                }
            }
        }
        QVERIFY(!renderingFromName("photo"));
        // Training sees both the grid's pictures and the varied ones, never the drawn test set's.
        QCOMPARE(SyntheticTask::trainingSample(3, 4).image, SyntheticTask::sample(3, 4).image);
        QCOMPARE(SyntheticTask::trainingSample(3, 5).image, SyntheticTask::sample(3, 5, Rendering::Varied).image);
    }

    void shortTrainingLearnsAndLoads()
    {
        QTemporaryDir dir;
        TrainOptions o;
        o.scheme.params.kind = geometry::SchemeKind::Circle;
        o.scheme.age = "strategy_4";
        o.output = dir.filePath("model");
        o.steps = 40;
        o.batch = 8;
        const TrainResult r = train(o);
        QVERIFY2(r.finalLoss < r.firstLoss, qPrintable(QString("loss %1 -> %2").arg(r.firstLoss).arg(r.finalLoss)));
        QVERIFY(r.parameters > 500000);
        for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "preprocessor_config.json"})
            QVERIFY2(QFile::exists(QDir(o.output).filePath(f)), f);
        QVERIFY(QFileInfo(QDir(o.output).filePath("model.safetensors")).size() < 8 << 20);
        // The normal loader reads it, with the scheme it was trained under.
        const ModelScheme recorded = recordedScheme(o.output);
        QCOMPARE(recorded.params.kind, geometry::SchemeKind::Circle);
        QCOMPARE(QString::fromStdString(recorded.age), QString("strategy_4"));
        QVERIFY(isTaskModel(o.output));
        QVERIFY(!isTaskModel(dir.path())); // no config.json
        const EvalResult e = evaluate(o.output, 5, 99);
        QCOMPARE(e.samples, 5);
        QCOMPARE(e.grounding.size(), size_t(4));
        QCOMPARE(e.scheme, QString("circle + AGE strategy_4"));
    }

    void fineTuneFreezesVisionAndTrainsHarope()
    {
        QTemporaryDir dir;
        TrainOptions base;
        base.output = dir.filePath("base");
        base.steps = 3;
        base.batch = 4;
        train(base);

        TrainOptions tune;
        tune.from = base.output;
        tune.output = dir.filePath("harope");
        tune.harope = true;
        tune.steps = 6;
        tune.batch = 4;
        tune.lr = 1e-2;
        train(tune);

        Vlm before(base.output), after(tune.output);
        QVERIFY(!before.language().hasHarope());
        QVERIFY(after.language().hasHarope());
        // Vision and merger frozen: identical up to the f16 storage both went through.
        const auto vb = before.vision().weights(), va = after.vision().weights();
        QCOMPARE(va.size(), vb.size());
        for (size_t i = 0; i < va.size(); ++i)
            QVERIFY2(torch::equal(*va[i].tensor, *vb[i].tensor), va[i].name.c_str());
        // The head maps moved away from the identity they started at.
        double moved = 0;
        for (auto& [name, t] : after.language().weights())
            if (name.find("harope.a_u") != std::string::npos)
                moved += t->abs().max().item<double>();
        QVERIFY2(moved > 1e-4, qPrintable(QString::number(moved)));
        QCOMPARE(evaluate(tune.output, 2, 99).scheme, QString("mrope + HARoPE"));
        // config.json records what repeats the run: the peak learning rate of the tune and of its base.
        QFile config(QDir(tune.output).filePath("config.json"));
        QVERIFY(config.open(QIODevice::ReadOnly));
        const QJsonObject training = QJsonDocument::fromJson(config.readAll()).object()["ropescope"].toObject()["training"].toObject();
        QCOMPARE(training["peak_lr"].toDouble(), 1e-2);
        QCOMPARE(training["weight_decay"].toDouble(), tune.weightDecay);
        QCOMPARE(training["base_training"].toObject()["peak_lr"].toDouble(), 2e-3); // the from-scratch default
    }
};

QTEST_GUILESS_MAIN(TestBundledTask)
#include "test_bundled_task.moc"
