// `ropescope check-positions DUMP`: a training pipeline's position ids against the model family's own rule
// (core/model/analysis/position_check), with a report and figures of the first samples that differ.
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/model_options.h"
#include "app/cli/output.h"
#include "core/io/atomic_file.h"
#include "core/model/analysis/position_dump.h"
#include "views/charts/chart_export.h"
#include "views/charts/position_diff_chart.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <cstdio>
#include <map>

namespace ropescope::cli {
namespace {

constexpr int kFigures = 3; // figures of the first differing samples

model::ModelConfig ruleFrom(const QCommandLineParser& parser, QString* family)
{
    if (parser.isSet("family") == parser.isSet("model"))
        throw UsageError("give the family's rule with --family " + model::familyNames().replace(", ", "|").toStdString() + " or --model DIR");
    if (parser.isSet("family")) {
        const QString name = parser.value("family");
        if (name == "glm-v" || name == "paddleocr-vl")
            throw UsageError("--family " + name.toStdString() + ": its rule comes with its engine (issues 42 and 46); the families checked now are " +
                             model::familyNames().toStdString());
        const auto a = model::familyFromName(name);
        if (!a)
            throw UsageError("--family: expected one of " + model::familyNames().toStdString() + ", got '" + name.toStdString() + "'");
        *family = name;
        return model::familyConfig(*a);
    }
    const model::ModelConfig config = runModelCommand([&] { return model::loadModelConfig(QDir(parser.value("model")).filePath("config.json")); });
    *family = model::familyName(config.architecture);
    return config;
}

QString sampleWords(const model::SampleCheck& c)
{
    static const char* axes[] = {"t", "h", "w", "text"};
    QString s = QString("%1 row %2: %3").arg(QFileInfo(c.batch).fileName()).arg(c.row).arg(model::faultKindName(c.kind));
    if (!c.detail.isEmpty())
        s += " (" + c.detail + ")";
    if (c.firstToken >= 0)
        s += QString("; first at token %1 (%2), axis %3: got %4, expected %5").arg(c.firstToken).arg(c.segment, axes[c.axis]).arg(c.got).arg(c.expected);
    return s;
}

} // namespace

int runCheckPositions(const QStringList& args)
{
    QCommandLineParser parser;
    parser.addPositionalArgument("dump", "A batch dump (.safetensors, .npz or .pt: input_ids, attention_mask, image_grid_thw / video_grid_thw, "
                                         "second_per_grid_ts, position_ids [3|4, B, L], rope_deltas) or a folder of them, one batch each.");
    parser.addOptions({
        {"family", "The rule to check against: " + model::familyNames() + ".", "F"},
        {"model", "Or read the family (and its token ids) from a model folder's config.json.", "DIR"},
        {"report", "Also write report.json and figures of the first differing samples (PNG, SVG, PDF) into this folder.", "DIR"},
        {"list", "How many differing samples to list (default 20; the report lists them all).", "N"},
        {"json", "Print the report's JSON instead of text."},
    });
    parseOrThrow(parser, args, true);
    if (parser.positionalArguments().size() != 1)
        throw UsageError("expected one dump: ropescope check-positions DUMP (--family F | --model DIR)");
    const int listed = parser.isSet("list") ? parseInteger(parser, "list") : 20;
    if (listed < 0 || listed > 1000000)
        throw UsageError("--list: 0..1000000");
    QString family;
    const model::ModelConfig config = ruleFrom(parser, &family);
    const bool report = parser.isSet("report");

    QElapsedTimer timer;
    timer.start();
    std::vector<model::SampleCheck> differing;
    std::map<std::string, int> kinds;
    int64_t checked = 0, batches = 0;
    runModelCommand([&] {
        const std::vector<QString> files = model::dumpFiles(parser.positionalArguments().first());
        for (const QString& file : files) {
            for (model::SampleCheck& c : model::checkBatch(model::readDumpBatch(file), config, report)) {
                ++checked;
                if (c.kind == model::FaultKind::None)
                    continue;
                ++kinds[model::faultKindName(c.kind)];
                if (!report || static_cast<int>(differing.size()) >= kFigures) { // only the figures need the positions
                    c.gotPositions.clear();
                    c.expectedPositions.clear();
                    c.segments.clear();
                }
                differing.push_back(std::move(c));
            }
            if (++batches % 100 == 0 && files.size() > 200)
                std::fprintf(stderr, "check-positions: %lld/%zu batches\n", static_cast<long long>(batches), files.size());
        }
    });
    QJsonObject kindsJson;
    for (const auto& [k, n] : kinds)
        kindsJson[QString::fromStdString(k)] = n;
    QJsonArray samples;
    for (const model::SampleCheck& c : differing)
        samples.append(model::sampleCheckJson(c));
    const QJsonObject json{{"family", family},
                           {"dump", parser.positionalArguments().first()},
                           {"batches", static_cast<double>(batches)},
                           {"samples", static_cast<double>(checked)},
                           {"differing", static_cast<double>(differing.size())},
                           {"kinds", kindsJson},
                           {"differing_samples", samples},
                           {"ms", static_cast<double>(timer.elapsed())}};
    if (report) {
        const QString folder = parser.value("report");
        if (!QDir().mkpath(folder))
            throw Failure("--report " + folder.toStdString() + ": cannot create the folder");
        io::StagedFiles staged(folder); // the report and its figures appear together, or not at all
        try {
            staged.stage("report.json", QJsonDocument(json).toJson());
            for (size_t k = 0; k < differing.size() && static_cast<int>(k) < kFigures; ++k) {
                const model::SampleCheck& c = differing[k];
                views::PositionDiffChart chart;
                chart.title = QString("%1 row %2: %3 (%4)").arg(QFileInfo(c.batch).fileName()).arg(c.row).arg(model::faultKindName(c.kind), c.detail);
                chart.tokens = c.tokens;
                chart.got = c.gotPositions;
                chart.expected = c.expectedPositions;
                for (const QString& s : c.segments)
                    chart.segments << s;
                const QString stem = QString("sample_%1_%2_row%3").arg(k).arg(QFileInfo(c.batch).completeBaseName()).arg(c.row);
                const QJsonObject meta = model::sampleCheckJson(c);
                const auto paint = [&chart](QPainter& p, const QRectF& area) { views::paintPositionDiffChart(p, area, chart); };
                staged.stage(stem + ".png", views::renderFigure(paint, QSize(1600, 900), views::FigureFormat::Png, meta));
                staged.stage(stem + ".svg", views::renderFigure(paint, QSize(1600, 900), views::FigureFormat::Svg, meta));
                staged.stage(stem + ".pdf", views::renderFigure(paint, QSize(1600, 900), views::FigureFormat::Pdf, meta));
            }
            staged.commit();
        } catch (const io::IoError& e) {
            throw Failure(e.what());
        }
    }
    if (parser.isSet("json")) {
        writeOutput({}, QJsonDocument(json).toJson());
    } else {
        std::printf("check-positions: %lld samples in %lld batches against %s\n", static_cast<long long>(checked), static_cast<long long>(batches),
                    qPrintable(family));
        for (size_t k = 0; k < differing.size() && static_cast<int>(k) < listed; ++k)
            std::printf("  %s\n", terminalSafe(sampleWords(differing[k]).toStdString()).c_str());
        if (static_cast<int>(differing.size()) > listed)
            std::printf("  ... and %zu more (--list N, or --report DIR for all)\n", differing.size() - static_cast<size_t>(listed));
        QStringList counts;
        for (const auto& [k, n] : kinds)
            counts << QString("%1 %2").arg(QString::fromStdString(k)).arg(n);
        std::printf("summary: %lld checked, %zu differ%s\n", static_cast<long long>(checked), differing.size(),
                    counts.isEmpty() ? "" : qPrintable(": " + counts.join(", ")));
        for (const auto& [k, n] : kinds) {
            const auto kind = k == "1-d" ? model::FaultKind::OneD : k == "temporal" ? model::FaultKind::Temporal : k == "offset" ? model::FaultKind::Offset
                              : k == "rope-deltas" ? model::FaultKind::RopeDeltas : model::FaultKind::Other;
            std::printf("  %s: %s\n", k.c_str(), model::faultKindWords(kind));
        }
    }
    return differing.empty() ? 0 : kExitFailure;
}

} // namespace ropescope::cli
