// Every bundled model (resources/models/*) through the whole inference path on 200 held-out samples:
// accuracy must stay within 3 points of the figure recorded beside it (eval.json, the docs/MODELS.md table's
// source). An end-to-end check of loader, tokenizer, preprocessing, positions and decoder.
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "tests/support/test_paths.h"
#include "core/geometry/age.h"
#include "core/io/resource_paths.h"
#include "core/model/analysis/evaluator.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/model_scheme.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "core/model/training/synthetic_task.h"

#include <torch/types.h>
#endif

using namespace ropescope;

class TestBundledModels : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void accuracyMatchesTheReadme_data()
    {
        QTest::addColumn<QString>("dir");
        const QDir models(io::resourceDir() + "/models");
        const QStringList names = models.entryList(QDir::Dirs | QDir::NoDotAndDotDot);
        QVERIFY2(names.contains("mrope"), "the bundled mrope model is missing");
        for (const QString& n : names)
            QTest::newRow(qPrintable(n)) << models.filePath(n);
    }
    void accuracyMatchesTheReadme()
    {
        QFETCH(QString, dir);
        QFile f(dir + "/eval.json");
        QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(dir + "/eval.json missing"));
        const QJsonObject recorded = QJsonDocument::fromJson(f.readAll()).object();
        const double expected = recorded["accuracy"].toDouble(-1);
        QVERIFY(expected >= 0);
        const model::EvalResult r = model::evaluate(dir, 200, static_cast<uint64_t>(recorded["seed"].toInteger(1000003)));
        qInfo("%s: accuracy %.3f (recorded %.3f), last-layer grounding %.2f", qPrintable(QFileInfo(dir).fileName()), r.accuracy(), expected,
              r.grounding.back());
        QVERIFY2(std::abs(r.accuracy() - expected) <= 0.03,
                 qPrintable(QString("accuracy %1 vs recorded %2").arg(r.accuracy()).arg(expected)));
        // The measured value itself against the goal, not only the recorded one: within 3 points of a
        // recorded 0.92 would let 0.89 pass.
        QVERIFY2(r.accuracy() >= 0.92, qPrintable(QString("accuracy %1 below the 0.92 goal").arg(r.accuracy())));
        QVERIFY(QFileInfo(dir + "/model.safetensors").size() <= 8 << 20);
        QVERIFY(r.shift.empty()); // under its own scheme nothing moves
    }

    // The second test set (the same held-out samples drawn the way another program would) and pictures
    // drawn with ImageMagick (tests/data/drawn): what each model scores is what eval_drawn.json and
    // eval_user_drawn.json beside it record, and the drawn set is at the bar of 85%.
    void drawnPicturesMatchTheReadme_data() { accuracyMatchesTheReadme_data(); }
    void drawnPicturesMatchTheReadme()
    {
        QFETCH(QString, dir);
        const auto recorded = [&](const char* name) {
            QFile f(dir + "/" + name);
            return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
        };
        const QJsonObject drawn = recorded("eval_drawn.json"), user = recorded("eval_user_drawn.json"), grid = recorded("eval.json");
        QVERIFY2(!drawn.isEmpty() && !user.isEmpty(), qPrintable(dir + ": eval_drawn.json or eval_user_drawn.json missing"));
        QCOMPARE(drawn["rendering"].toString(), QString("drawn"));
        QVERIFY2(drawn["accuracy"].toDouble() >= 0.85, qPrintable(QString("drawn %1").arg(drawn["accuracy"].toDouble())));
        // Before the augmentation the generator's own pictures scored 92-95%; now 93-96% (docs/MODELS.md, Results).
        QVERIFY2(grid["accuracy"].toDouble() >= 0.92, qPrintable(QString("grid %1").arg(grid["accuracy"].toDouble())));
        const model::EvalResult r =
            model::evaluate(dir, 200, static_cast<uint64_t>(drawn["seed"].toInteger(1000003)), std::nullopt, model::Rendering::Drawn);
        QVERIFY2(std::abs(r.accuracy() - drawn["accuracy"].toDouble()) <= 0.03,
                 qPrintable(QString("drawn accuracy %1 vs recorded %2").arg(r.accuracy()).arg(drawn["accuracy"].toDouble())));
        QVERIFY2(r.accuracy() >= 0.85, qPrintable(QString("drawn accuracy %1 below the 0.85 goal").arg(r.accuracy())));
        const model::EvalResult u = model::evaluateQuestions(dir, model::readQuestionSet(ROPESCOPE_TEST_DATA + "/drawn/questions.jsonl"));
        QCOMPARE(u.samples, 103);
        QVERIFY2(std::abs(u.accuracy() - user["accuracy"].toDouble()) <= 0.03,
                 qPrintable(QString("ImageMagick pictures %1 vs recorded %2").arg(u.accuracy()).arg(user["accuracy"].toDouble())));
        qInfo("%s: drawn %.3f, ImageMagick pictures %.3f", qPrintable(QFileInfo(dir).fileName()), r.accuracy(), u.accuracy());
    }

    // The vision tower every bundled model shares (tunes freeze it) names what each merged token's cell
    // holds through the tied LM head, and names nothing where no object's centre lies, also on pictures
    // drawn off the grid, where objects spill into their neighbours' tokens (the training's "none" class,
    // logit 0: docs/MODELS.md, Training). Without the empty cells' target the spill read as a second red object
    // and count questions lost 10 points.
    void visionTowerNamesEachCellOrNothing_data()
    {
        QTest::addColumn<int>("rendering");
        QTest::newRow("grid") << static_cast<int>(model::Rendering::OnGrid);
        QTest::newRow("drawn") << static_cast<int>(model::Rendering::Drawn);
    }
    void visionTowerNamesEachCellOrNothing()
    {
        QFETCH(int, rendering);
        const QString dir = io::resourceDir() + "/models/mrope";
        model::Vlm vlm(dir);
        const model::Tokenizer tok = model::Tokenizer::load(dir + "/tokenizer.json");
        torch::NoGradGuard noGrad;
        const auto wordsThenNone = [&](const torch::Tensor& logits, const QStringList& words) {
            std::vector<int64_t> ids;
            for (const QString& w : words)
                ids.push_back(tok.tokenId(w.toStdString()).value());
            const auto picked = logits.index_select(1, torch::tensor(ids, torch::kInt64));
            return torch::cat({picked, torch::zeros({picked.size(0), 1}, picked.options())}, 1).argmax(1);
        };
        int occupied = 0, occupiedRight = 0, empty = 0, emptyRight = 0;
        for (uint64_t i = 0; i < 40; ++i) {
            const model::SyntheticSample s = model::SyntheticTask::sample(1000003, i, static_cast<model::Rendering>(rendering));
            const model::ProcessedImage image = model::preprocessImage(s.image, vlm.config().vision);
            const auto features = vlm.vision().forward(image.pixels, image.grid).embeds; // [64, hidden]
            QCOMPARE(features.size(0), int64_t(64));
            const auto logits = features.to(torch::kFloat32).matmul(vlm.language().lmHead().to(torch::kFloat32).t());
            const auto colour = wordsThenNone(logits, model::SyntheticTask::colours());
            const auto shape = wordsThenNone(logits, model::SyntheticTask::shapes());
            for (int c = 0; c < 64; ++c) {
                const int wantColour = s.cellColour[c] < 0 ? 5 : s.cellColour[c], wantShape = s.cellShape[c] < 0 ? 4 : s.cellShape[c];
                const bool right = colour[c].item<int64_t>() == wantColour && shape[c].item<int64_t>() == wantShape;
                (s.cellColour[c] < 0 ? empty : occupied) += 1;
                (s.cellColour[c] < 0 ? emptyRight : occupiedRight) += right;
            }
        }
        const double objects = static_cast<double>(occupiedRight) / occupied, nothing = static_cast<double>(emptyRight) / empty;
        qInfo("%s: cells with an object named right %.4f (%d), empty cells named nothing %.4f (%d)",
              model::renderingName(static_cast<model::Rendering>(rendering)), objects, occupied, nothing, empty);
        QVERIFY2(objects >= 0.97, qPrintable(QString::number(objects)));
        QVERIFY2(nothing >= 0.99, qPrintable(QString::number(nothing)));
    }

    // What counts as the model's own scheme: kind, AGE as a per-layer pattern, circle's parameters only
    // where a layer uses Circle-RoPE.
    void sameSchemeComparesWhatPlacesTokens()
    {
        const model::ModelScheme circleAge = model::recordedScheme(io::resourceDir() + "/models/circle_age");
        QVERIFY(model::sameScheme(circleAge, circleAge, 4));
        model::ModelScheme asPattern = circleAge;
        asPattern.age = geometry::parseAgeSchedule("strategy_4", 4).pattern(); // what `attend --age` hands on
        QVERIFY(model::sameScheme(asPattern, circleAge, 4));
        model::ModelScheme otherAlpha = circleAge;
        otherAlpha.params.circle.alpha = 0.3;
        QVERIFY(!model::sameScheme(otherAlpha, circleAge, 4));
        model::ModelScheme noAge = circleAge;
        noAge.age.clear();
        QVERIFY(!model::sameScheme(noAge, circleAge, 4));
        model::ModelScheme mrope = model::recordedScheme(io::resourceDir() + "/models/mrope"), mropeOtherAlpha = mrope;
        mropeOtherAlpha.params.circle.alpha = 0.3; // not used by mrope
        QVERIFY(model::sameScheme(mropeOtherAlpha, mrope, 4));
        QVERIFY(!model::sameScheme(mrope, circleAge, 4));

        // The text axis and the frequency allocation place tokens too: recorded with the model and compared
        // (a model trained with --text-vector 0,0,1 used to be recorded with the default 1,1,1).
        model::ModelScheme tilted = circleAge;
        tilted.params.circle.textVector = Eigen::Vector3d(0, 0, 1);
        const model::ModelScheme recorded = model::schemeFromJson(model::schemeToJson(tilted));
        QCOMPARE(recorded.params.circle.textVector, Eigen::Vector3d(0, 0, 1));
        QVERIFY(model::sameScheme(recorded, tilted, 4));
        QCOMPARE(QString::fromStdString(model::schemeDifference(circleAge, tilted, 4)), QString("Text vector 1,1,1, trained 0,0,1"));
        model::ModelScheme scaled = tilted;
        scaled.params.circle.textVector = Eigen::Vector3d(0, 0, 5); // the same direction
        QVERIFY(model::sameScheme(scaled, tilted, 4));
        model::ModelScheme interleaved = mrope;
        interleaved.params.allocationKind = geometry::FrequencyAllocation::Kind::InterleavedMrope;
        QCOMPARE(model::schemeFromJson(model::schemeToJson(interleaved)).params.allocationKind, interleaved.params.allocationKind);
        QCOMPARE(QString::fromStdString(model::schemeDifference(interleaved, mrope, 4)),
                 QString("frequency allocation interleaved-mrope[24,20,20], trained sectioned[16,24,24]"));
        model::ModelScheme explicitSectioned = mrope;
        explicitSectioned.params.allocationKind = geometry::FrequencyAllocation::Kind::Sectioned;
        QVERIFY(model::sameScheme(explicitSectioned, mrope, 4)); // the same allocation, named

        // The 2025 schemes' placement parameters are recorded and compared where the scheme reads them.
        model::ModelScheme mm = mrope;
        mm.params.kind = geometry::SchemeKind::MmRope;
        mm.params.positionScale = Eigen::Vector3d(1, 2, 3);
        mm.params.temporalStride = 0.5;
        const model::ModelScheme mmRecorded = model::schemeFromJson(model::schemeToJson(mm));
        QCOMPARE(mmRecorded.params.positionScale, Eigen::Vector3d(1, 2, 3));
        QVERIFY(model::sameScheme(mmRecorded, mm, 4));
        model::ModelScheme mmDefault = mm;
        mmDefault.params.positionScale = Eigen::Vector3d(4, 8, 8);
        QCOMPARE(QString::fromStdString(model::schemeDifference(mmDefault, mm, 4)), QString("MM-RoPE scale 4,8,8, trained 1,2,3"));
        mmDefault = mm;
        mmDefault.params.temporalStride.reset();
        QCOMPARE(QString::fromStdString(model::schemeDifference(mmDefault, mm, 4)), QString("Frame spacing delta 1, trained 0.5"));
        model::ModelScheme plus = mrope;
        plus.params.kind = geometry::SchemeKind::VideoRopePlus;
        model::ModelScheme plus8 = plus;
        plus8.params.ntkFactor = 8;
        QCOMPARE(QString::fromStdString(model::schemeDifference(plus8, model::schemeFromJson(model::schemeToJson(plus)), 4)),
                 QString("VideoRoPE++ NTK factor 8, trained 4"));
        model::ModelScheme v2pe = mrope;
        v2pe.params.kind = geometry::SchemeKind::V2pe;
        model::ModelScheme v2pe7 = v2pe;
        v2pe7.params.visualStride = 7;
        QVERIFY(!model::sameScheme(v2pe7, v2pe, 4));
        QVERIFY(model::sameScheme(mm, mm, 4));
        // The words are the parameter table's labels, with the values as a person reads them.
        model::ModelScheme autoRadius = circleAge;
        autoRadius.params.circle.radiusMode = geometry::RadiusMode::AutoPaper;
        QCOMPARE(QString::fromStdString(model::schemeDifference(autoRadius, circleAge, 4)), QString("radius mode auto, trained fixed"));
        // The rows a model sets itself (Qwen2.5-VL's time index) are no difference of the scheme asked for.
        model::ModelScheme qwen25Time = mrope;
        qwen25Time.params.temporal.mode = geometry::TemporalParams::Mode::Qwen25VL;
        QVERIFY(model::sameScheme(qwen25Time, mrope, 4));
    }

    // Under a scheme it was not trained with, eval says how far the question->image attention moved from
    // the model's own scheme, per layer (total variation between the two runs' maps).
    void evalMeasuresTheAttentionShiftOfASwappedScheme()
    {
        const QString dir = io::resourceDir() + "/models/mrope";
        model::ModelScheme circle = model::recordedScheme(dir);
        circle.params.kind = geometry::SchemeKind::Circle;
        const model::EvalResult r = model::evaluate(dir, 20, 1000003, circle);
        QCOMPARE(r.shift.size(), r.grounding.size());
        for (double d : r.shift)
            QVERIFY2(d > 0.02 && d < 1, qPrintable(QString::number(d)));
        model::ModelScheme same = model::recordedScheme(dir);
        QVERIFY(model::evaluate(dir, 5, 1000003, same).shift.empty()); // the own scheme, given explicitly
    }
};

QTEST_GUILESS_MAIN(TestBundledModels)
#include "test_bundled_models.moc"
