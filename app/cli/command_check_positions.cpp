// `ropescope check-positions DUMP`: a training pipeline's position ids against the model family's own rule
// (core/model/analysis/position_check), with a report and figures of the first samples that differ.
#include "app/cli/check_positions_report.h"
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/model_options.h"
#include "app/cli/output.h"
#include "core/io/atomic_file.h"
#include "core/model/analysis/position_dump.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonDocument>

#include <algorithm>
#include <cstdio>
#include <map>
#include <new>

namespace ropescope::cli {
namespace {

constexpr int kFigures = 3; // figures of the first differing samples

// As ropescope.SampleCheck prints itself; a sequential family's one position names no axis.
QString sampleWords(const model::SampleCheck& c)
{
    QString s = QString("%1 row %2: %3").arg(QFileInfo(c.batch).fileName()).arg(c.row).arg(model::faultKindName(c.kind));
    if (!c.detail.isEmpty())
        s += " (" + c.detail + ")";
    if (c.firstToken >= 0)
        s += QString("; first at token %1 (%2)%3: got %4, expected %5")
                 .arg(c.firstToken)
                 .arg(c.segment, c.components == 1 ? QString() : ", axis " + model::axisName(c))
                 .arg(c.got)
                 .arg(c.expected);
    return s;
}

} // namespace

int runCheckPositions(const QStringList& args)
{
    QCommandLineParser parser;
    parser.addPositionalArgument(
        "dump",
        "A batch dump (.safetensors, .npz or .pt: input_ids, attention_mask, image_grid_thw / video_grid_thw, "
        "second_per_grid_ts, position_ids [3|4, B, L] (gemma3, gemma4: [B, L]), rope_deltas) or a folder of them, one "
        "batch each.");
    parser.addOptions({
        {"report", "Also write report.json and figures of the first differing samples (PNG, SVG, PDF) into this folder.", "DIR"},
        {"list", "How many differing samples to list (default 20; the report lists them all).", "N"},
        {"json", "Print the report's JSON instead of text."},
    });
    addPositionRuleOptions(parser);
    parseOrThrow(parser, args, true);
    if (parser.positionalArguments().size() != 1)
        throw UsageError("expected one dump: ropescope check-positions DUMP (--family F | --model DIR)");
    const int listed = parser.isSet("list") ? parseInteger(parser, "list") : 20;
    if (listed < 0 || listed > 1000000)
        throw UsageError("--list: 0..1000000");
    const model::PositionRule rule = positionRuleFrom(parser);
    const QString family = rule.family;
    const bool report = parser.isSet("report");

    QElapsedTimer timer;
    timer.start();
    // Progress by samples, at most once a second, so that a long check of one big file shows it too and a
    // short one prints nothing.
    QElapsedTimer sinceShown;
    sinceShown.start();
    const auto progress = [&sinceShown](const model::DumpProgress& p) {
        if (sinceShown.elapsed() < 1000)
            return;
        sinceShown.restart();
        std::fprintf(stderr, "check-positions: %lld samples, %lld/%lld files\n", static_cast<long long>(p.samples),
                     static_cast<long long>(p.filesDone), static_cast<long long>(p.files));
    };
    // The listed samples are kept, the rest only counted: the report lists up to kMaxListedSamples.
    const bool asJson = parser.isSet("json");
    const int keep = report || asJson ? model::kMaxListedSamples : std::min(listed, model::kMaxListedSamples);
    const QString dump = parser.positionalArguments().first();
    const model::DumpCheck check = runModelCommand([&] {
        try {
            return model::checkDump(dump, rule, report ? kFigures : 0, keep, progress);
        } catch (const std::bad_alloc&) { // not the model runs' advice (--max-pixels): a dump's files are the input here
            throw Failure("out of memory while checking " + dump.toStdString() +
                          ": split its batches into smaller files (each is read whole, and its checked tensors may hold up to " +
                          std::to_string(model::kMaxDumpElements) + " elements)");
        }
    });
    const std::vector<model::SampleCheck>& differing = check.differing;
    const std::map<std::string, int64_t>& kinds = check.kinds;
    const int64_t checked = check.samples, batches = check.batches, differ = check.differingTotal;
    QJsonObject json = model::dumpCheckJson(check, family, dump);
    json["ms"] = static_cast<double>(timer.elapsed());
    if (report) {
        const QString folder = parser.value("report");
        if (!QDir().mkpath(folder))
            throw Failure("--report " + folder.toStdString() + ": cannot create the folder");
        io::StagedFiles staged(folder); // the report and its figures appear together, or not at all
        try {
            staged.stage("report.json", QJsonDocument(json).toJson());
            for (size_t k = 0; k < differing.size() && static_cast<int>(k) < kFigures; ++k) {
                const model::SampleCheck& c = differing[k];
                const QString stem = QString("sample_%1_%2_row%3").arg(k).arg(QFileInfo(c.batch).completeBaseName()).arg(c.row);
                staged.stage(stem + ".png", positionCheckFigure(c, views::FigureFormat::Png));
                staged.stage(stem + ".svg", positionCheckFigure(c, views::FigureFormat::Svg));
                staged.stage(stem + ".pdf", positionCheckFigure(c, views::FigureFormat::Pdf));
            }
            staged.commit();
        } catch (const io::IoError& e) {
            throw Failure(e.what());
        }
    }
    if (asJson) {
        writeOutput({}, QJsonDocument(json).toJson());
    } else {
        std::printf("check-positions: %lld samples in %lld batches against %s\n", static_cast<long long>(checked),
                    static_cast<long long>(batches), qPrintable(family));
        for (size_t k = 0; k < differing.size() && static_cast<int>(k) < listed; ++k)
            std::printf("  %s\n", terminalSafe(sampleWords(differing[k]).toStdString()).c_str());
        const auto printed = std::min(static_cast<int64_t>(listed), static_cast<int64_t>(differing.size()));
        if (differ > printed)
            std::printf("  ... and %lld more (--list N, or --report DIR for the first %d)\n", static_cast<long long>(differ - printed),
                        model::kMaxListedSamples);
        QStringList counts;
        for (const auto& [k, n] : kinds)
            counts << QString("%1 %2").arg(QString::fromStdString(k)).arg(n);
        std::printf("summary: %lld checked, %lld differ%s\n", static_cast<long long>(checked), static_cast<long long>(differ),
                    counts.isEmpty() ? "" : qPrintable(": " + counts.join(", ")));
        for (const auto& [k, n] : kinds) {
            const auto kind = k == "1-d" ? model::FaultKind::OneD
                : k == "temporal"        ? model::FaultKind::Temporal
                : k == "offset"          ? model::FaultKind::Offset
                : k == "rope-deltas"     ? model::FaultKind::RopeDeltas
                                         : model::FaultKind::Other;
            std::printf("  %s: %s\n", k.c_str(), model::faultKindWords(kind));
        }
    }
    return differ == 0 ? 0 : kExitFailure;
}

} // namespace ropescope::cli
