#include "app/batch/batch_job.h"
#include "app/cli/attend_output_table.h"
#include "app/cli/batch_shards.h"
#include "app/cli/bias_run.h"
#include "app/cli/check_positions_report.h"
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/figure_options.h"
#include "app/cli/freqs_report.h"
#include "app/cli/geometry_options.h"
#include "app/cli/model_options.h"
#include "app/cli/ptd_report.h"
#include "core/geometry/errors.h"
#include "core/io/atomic_file.h"
#include "core/io/position_table_io.h"
#include "core/model/analysis/position_dump.h"
#include "core/user_schemes/python_scheme.h"
#include "views/charts/chart_export.h"
#include "views/charts/readout_charts.h"
#ifdef ROPESCOPE_WITH_RENDER
#include "views/render/offscreen_view.h"
#endif
#include "core/session/readouts.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>

#include <cstdio>
#include <memory>
#include <optional>
#include <utility>

namespace ropescope::cli {
using namespace views;

namespace {

// Produces the bytes of one item. Keeps one offscreen view and one readout engine across items.
class ItemRenderer {
public:
    QByteArray produce(const batch::BatchItem& item)
    {
        if (item.type == "attention")
            return attention(item);
        if (item.type == "bias")
            return bias(item);
        if (item.type == "check-positions")
            return checkPositions(item);
        QCommandLineParser parser;
        addGeometryOptions(parser);
        addFigureOptions(parser);
        parser.addOption({"resolution", "", "WxH"});
        parser.addOption({"per-token", ""});
        parseOrThrow(parser, QStringList{"batch"} + item.flags);
        const GeometryRequest req = parseGeometryOptions(parser);
        const geometry::PositionTable table = req.build();
        const FigureOptions figure = parseFigureOptions(parser, table);
        const bool chart = item.type.endsWith("-chart") || item.type == "prior-heatmap";
        const QSize size = parser.isSet("resolution") ? parseResolution(parser) : chart ? QSize(1200, 750) : QSize(1200, 900);

        if (item.type == "cone") {
#ifndef ROPESCOPE_WITH_RENDER
            throw Failure("cone figures: this build has no VTK (configured with -DROPESCOPE_RENDER=OFF)");
#else
            if (!item.output.endsWith(".png", Qt::CaseInsensitive))
                throw UsageError("cone figures are PNG: output must end in .png");
            if (!view_)
                view_ = std::make_unique<OffscreenView>(size);
            view_->setSize(size);
            view_->scene().update(table, figure.scene);
            view_->scene().applyCamera(figure.camera);
            return encodePng(view_->grab(), figureMetadata(req, figure, size));
#endif
        }
        if (item.type == "table") {
            if (item.output.endsWith(".json", Qt::CaseInsensitive))
                return io::positionTableJson(table, io::schemeParamsJson(req.params));
            if (item.output.endsWith(".csv", Qt::CaseInsensitive))
                return io::positionTableCsv(table);
            throw UsageError("tables are .csv or .json");
        }
        if (item.type == "ptd")
            return QJsonDocument(ptdReport(req, table, parser.isSet("per-token"))).toJson();
        if (item.type == "freqs")
            return frequencyReport(req, item.output, parser.isSet("resolution") ? size : QSize(1200, 750));

        FigureFormat format;
        try {
            format = figureFormatFor(item.output);
        } catch (const std::invalid_argument& e) {
            throw UsageError(e.what());
        }
        session::Readouts readouts;
        try {
            readouts = engine_.compute(explorerState(req, figure));
        } catch (const geometry::InvalidInput& e) {
            throw UsageError(e.what());
        }
        if (readouts.ptdBySchemes.empty())
            throw UsageError("charts need both text and visual tokens in the layout");
        ChartPainter paint;
        if (item.type == "ptd-chart")
            paint = [c = ptdChart(readouts)](QPainter& p, const QRectF& r) { paintBarChart(p, r, c); };
        else if (item.type == "profile-chart")
            paint = [c = profileChart(readouts)](QPainter& p, const QRectF& r) { paintProfileChart(p, r, c); };
        else
            paint = [c = priorChart(readouts)](QPainter& p, const QRectF& r) { paintHeatmapChart(p, r, c); };
        QJsonObject meta = figureMetadata(req, figure, size);
        meta["chart"] = item.type;
        return renderFigure(paint, size, format, meta);
    }

private:
    // An `attend` run. The model stays loaded while items use it, and its vision cache keeps an image's
    // embeddings, so a sweep over schemes on one image re-runs only the decoder.
    QByteArray attention(const batch::BatchItem& item)
    {
        QCommandLineParser parser;
        addGeometryOptions(parser);
        addAttentionOptions(parser);
        QStringList flags = item.flags; // the layout comes from the prompt and the image: drop a job default
        if (const qsizetype at = flags.indexOf("--layout"); at >= 0)
            flags.remove(at, 2);
        parseOrThrow(parser, QStringList{"batch"} + flags);
        const AttentionOptions options = parseAttentionOptions(parser);
        // Which of the run's files this item is (attend_output_table.cpp), decided before the model runs.
        const AttendOutput& output = attendOutputFor(item.output, options);
        const QString out = item.output.toLower();
        const views::FigureFormat format = output.type == AttendOutput::Type::Figure ? figureFormatFor(out) : views::FigureFormat::Png;
        return runModelCommand([&] {
            if (!model_ || model_->dir != options.modelDir || model_->device != options.device || model_->dtype != options.dtype) {
                model_.reset(); // one model in memory at a time
                model_ = ModelOnDevice::load(options.modelDir, options.device, options.dtype);
            }
            const AttentionAsAsked a = runAttentionAsAsked(*model_, parser, options);
            return output.write(AttendResult{a.run, a.compared ? &*a.compared : nullptr, options}, format);
        });
    }

    // A `bias` measurement: one file of it, chosen by the output's extension.
    QByteArray bias(const batch::BatchItem& item)
    {
        QCommandLineParser parser;
        addGeometryOptions(parser);
        addBiasOptions(parser);
        QStringList flags = item.flags; // the layout comes from the samples: drop a job default
        if (const qsizetype at = flags.indexOf("--layout"); at >= 0)
            flags.remove(at, 2);
        parseOrThrow(parser, QStringList{"batch"} + flags);
        const QString out = item.output.toLower();
        const bool figure = out.endsWith(".png") || out.endsWith(".svg") || out.endsWith(".pdf");
        if (!figure && !out.endsWith(".csv") && !out.endsWith(".json"))
            throw UsageError("bias items write the figure (.png/.svg/.pdf), the table (.csv) or the summary (.json)");
        if (parser.isSet("keep-samples"))
            throw UsageError("keep-samples: a batch bias item writes one file; `ropescope bias --keep-samples` writes bias_samples.csv");
        const BiasSetup setup = parseBiasOptions(parser);
        return runModelCommand([&] {
            if (!model_ || model_->dir != parser.value("model") || model_->device != c10::kCPU || model_->dtype != c10::kFloat) {
                model_.reset();
                model_ = ModelOnDevice::load(parser.value("model"), c10::kCPU, c10::kFloat);
            }
            const reports::BiasReport report = reports::biasReport(measureBiasFromFlags(parser, setup, *model_));
            if (figure)
                return report.figure(figureFormatFor(out));
            return out.endsWith(".csv") ? report.csv : QJsonDocument(report.json).toJson();
        });
    }

    // {"type": "check-positions", "dump": "DIR or FILE", "family": "qwen2.5-vl" | "model": "DIR"}: report.json's
    // content (.json), or the first differing sample's figure (.png/.svg/.pdf).
    static QByteArray checkPositions(const batch::BatchItem& item)
    {
        QCommandLineParser parser;
        addGeometryOptions(parser); // a job's defaults (layout, scheme) do not apply here
        addPositionRuleOptions(parser);
        parser.addOption({"dump", "", "PATH"});
        parseOrThrow(parser, QStringList{"batch"} + item.flags);
        if (!parser.isSet("dump"))
            throw UsageError("check-positions items need \"dump\": a dump file or folder");
        const QString out = item.output.toLower();
        const bool figure = out.endsWith(".png") || out.endsWith(".svg") || out.endsWith(".pdf");
        if (!figure && !out.endsWith(".json"))
            throw UsageError("check-positions items write the report (.json) or the first differing sample's figure (.png/.svg/.pdf)");
        const model::PositionRule rule = positionRuleFrom(parser);
        const QString family = rule.family;
        return runModelCommand([&] {
            const model::DumpCheck check =
                model::checkDump(parser.value("dump"), rule, figure ? 1 : 0, figure ? 1 : model::kMaxListedSamples);
            if (!figure)
                return QJsonDocument(model::dumpCheckJson(check, family, parser.value("dump"))).toJson();
            if (check.differing.empty())
                throw UsageError("every sample matches " + family.toStdString() +
                                 "'s rule: there is no differing sample to draw (write .json)");
            return positionCheckFigure(check.differing.front(), figureFormatFor(out));
        });
    }

#ifdef ROPESCOPE_WITH_RENDER
    std::unique_ptr<OffscreenView> view_;
#endif
    session::ReadoutEngine engine_;
    std::unique_ptr<ModelOnDevice> model_;
};

// --shard i/n as (i, n); (0, 1) without it. Throws UsageError for anything but 0 <= i < n.
std::pair<int, int> shardOf(const QCommandLineParser& parser)
{
    if (!parser.isSet("shard"))
        return {0, 1};
    static const QRegularExpression re("^(\\d{1,6})/(\\d{1,6})$");
    const auto m = re.match(parser.value("shard"));
    const int shardIndex = m.captured(1).toInt(), shardCount = m.captured(2).toInt();
    if (!m.hasMatch() || shardCount < 1 || shardIndex >= shardCount)
        throw UsageError("--shard: expected i/n with 0 <= i < n, got '" + parser.value("shard").toStdString() + "'");
    return {shardIndex, shardCount};
}

// A job file is not the user's command line: its Python files run only when the user says so.
void refuseUntrustedPython(const std::vector<batch::BatchItem>& items)
{
    refusePythonItems(items);
    // And whatever way an item might still name a .py file, loading one is refused before it runs.
    user_schemes::refusePythonSchemes("a batch job's Python scheme runs only with --trust-python");
}

// Produces and writes one item (`done` of `total`), printing a line either way; returns its manifest entry, whose
// "status" is "ok" or "error" (with the error): one item's failure does not end the batch.
QJsonObject runItem(ItemRenderer& renderer, const batch::BatchItem& item, const QDir& outDir, int done, size_t total)
{
    QElapsedTimer timer;
    timer.start();
    QJsonObject entry{
        {"index", item.index}, {"job_item", item.jobItem}, {"type", item.type}, {"output", item.output}, {"parameters", item.parameters}};
    try {
        if (!item.error.isEmpty())
            throw UsageError(item.error.toStdString());
        const QByteArray bytes = renderer.produce(item);
        io::writeFileInside(outDir.path(), item.output, bytes);
        if (item.output.endsWith(".svg", Qt::CaseInsensitive) || item.output.endsWith(".pdf", Qt::CaseInsensitive))
            io::writeFileInside(outDir.path(), item.output + ".json", QJsonDocument(item.parameters).toJson());
        entry["status"] = "ok";
        entry["ms"] = static_cast<double>(timer.elapsed());
        std::printf("[%d/%zu] %s -> %s ok (%lld ms)\n", done, total, qPrintable(item.type), qPrintable(item.output),
                    static_cast<long long>(timer.elapsed()));
    } catch (const HelpShown&) { // readJob refuses help keys; a flag that slips through must not end the batch
        entry["status"] = "error";
        entry["error"] = QString("item %1: asks for help text, which is not an output").arg(item.jobItem);
        std::fprintf(stderr, "[%d/%zu] %s\n", done, total, qPrintable(entry["error"].toString()));
    } catch (const std::exception& e) {
        QString reason = e.what();
        if (!reason.startsWith("item "))
            reason = QString("item %1: %2").arg(item.jobItem).arg(reason);
        entry["status"] = "error";
        entry["error"] = reason;
        std::fprintf(stderr, "[%d/%zu] %s\n", done, total, qPrintable(reason));
    }
    std::fflush(stdout);
    return entry;
}

} // namespace

int runBatch(const QStringList& args)
{
    QCommandLineParser parser;
    parser.addPositionalArgument("job", "Job file (JSON); see resources/jobs/example.json.");
    parser.addOptions({
        {"output", "Directory for everything the job writes (created if missing).", "DIR"},
        {"shard", "Run only shard i of n (0-based i), e.g. 0/4: every n-th item starting at i.", "i/n"},
        {"trust-python",
         "Run the Python scheme files the job names (their code runs as you; without this flag a job "
         "that names one is refused before anything runs)."},
    });
    parser.addOption({"merge", "With --output holding a --slurm run: write its manifest.json once every shard is complete."});
    addShardedOptions(parser, "job");
    parseOrThrow(parser, args, true);
    if (wantsSharding(parser))
        return runSharded(parser, args, shardedBatch());
    if (parser.isSet("merge")) {
        if (!parser.positionalArguments().isEmpty() || !parser.isSet("output"))
            throw UsageError("--merge: give only --output DIR, a folder written by batch --slurm");
        return mergeBatchShards(parser.value("output"));
    }
    if (parser.positionalArguments().size() != 1)
        throw UsageError("expected one job file: ropescope batch JOB.json --output DIR");
    if (!parser.isSet("output"))
        throw UsageError("--output DIR is required");
    if (parser.isSet("skip-complete") && !parser.isSet("shard"))
        throw UsageError("--skip-complete: only with --shard i/n");
    const std::pair<int, int> shard = shardOf(parser); // a lambda below captures these: no structured binding
    const int shardIndex = shard.first, shardCount = shard.second;

    std::vector<batch::BatchItem> all;
    try {
        all = batch::readJob(parser.positionalArguments().first());
    } catch (const batch::JobError& e) {
        throw UsageError(e.what());
    }
    const std::vector<batch::BatchItem> items = batch::shard(all, shardIndex, shardCount);
    if (!parser.isSet("trust-python"))
        refuseUntrustedPython(items);
    const QString jobPath = QFileInfo(parser.positionalArguments().first()).absoluteFilePath();
    if (parser.isSet("skip-complete") && batchShardComplete(parser.value("output"), shardIndex, shardCount, jobPath)) {
        std::fprintf(stderr, "batch: shard %d/%d is complete in %s already; skipped\n", shardIndex, shardCount,
                     qPrintable(parser.value("output")));
        return 0;
    }
    const QDir outDir(parser.value("output"));
    if (!QDir().mkpath(outDir.path()))
        throw Failure(outDir.path().toStdString() + ": cannot create the output directory");

    // The manifest is rewritten while the batch runs (at most every second, and at the end), so a killed
    // batch still says what it wrote.
    const QString manifestName = parser.isSet("shard") ? shardManifestName(shardIndex, shardCount) : "manifest.json";
    QJsonArray manifest;
    int failed = 0, done = 0;
    const auto writeManifest = [&](bool complete) {
        const QJsonObject root{{"job", jobPath},           {"shard", QString("%1/%2").arg(shardIndex).arg(shardCount)},
                               {"complete", complete},     {"items_total", static_cast<int>(items.size())},
                               {"written", done - failed}, {"failed", failed},
                               {"items", manifest}};
        try {
            io::writeFileInside(outDir.path(), manifestName, QJsonDocument(root).toJson());
        } catch (const io::IoError& e) {
            throw Failure(e.what());
        }
    };
    writeManifest(false);
    QElapsedTimer sinceManifest;
    sinceManifest.start();

    ItemRenderer renderer;
    for (const batch::BatchItem& item : items) {
        const QJsonObject entry = runItem(renderer, item, outDir, ++done, items.size());
        failed += entry["status"].toString() != "ok";
        manifest.append(entry);
        if (sinceManifest.elapsed() >= 1000) {
            writeManifest(false);
            sinceManifest.restart();
        }
    }
    writeManifest(true);
    std::printf("batch: %d written, %d failed; manifest %s\n", done - failed, failed, qPrintable(outDir.filePath(manifestName)));
    return failed ? kExitFailure : 0;
}

} // namespace ropescope::cli
