#include "app/cli/attend_output_table.h"

#include "app/cli/cli_error.h"

#include <QJsonDocument>

namespace ropescope::cli {
namespace {

using Type = AttendOutput::Type;

bool always(const AttentionOptions&)
{
    return true;
}

// The figure rows: a figure and its table (or token list), each behind one flag.
const std::vector<AttendOutput> kOutputs = {
    {"schemes", Type::Figure, "the schemes side by side", [](const AttentionOptions& o) { return !o.schemes.isEmpty(); },
     [](const AttendResult& r, views::FigureFormat f) { return r.compared->figure(f, r.options.heat); }},
    {"schemes", Type::Csv, "the schemes' table", [](const AttentionOptions& o) { return !o.schemes.isEmpty(); },
     [](const AttendResult& r, views::FigureFormat) { return r.compared->csv(); }},
    {"layers_heads", Type::Figure, "layers x heads", [](const AttentionOptions& o) { return o.layersHeads; },
     [](const AttendResult& r, views::FigureFormat f) { return r.run.layersHeadsFigure(f); }},
    {"layers_heads", Type::Csv, "the layers x heads table", [](const AttentionOptions& o) { return o.layersHeads; },
     [](const AttendResult& r, views::FigureFormat) { return r.run.layersHeadsCsv(); }},
    {"region", Type::Figure, "the region chart", [](const AttentionOptions& o) { return o.region.has_value(); },
     [](const AttendResult& r, views::FigureFormat f) { return r.run.regionFigure(f); }},
    {"region", Type::Csv, "the region table", [](const AttentionOptions& o) { return o.region.has_value(); },
     [](const AttendResult& r, views::FigureFormat) { return r.run.regionCsv(); }},
    {"own_prior", Type::Figure, "the own prior", [](const AttentionOptions& o) { return o.ownPrior; },
     [](const AttendResult& r, views::FigureFormat f) { return r.run.ownPriorFigure(f); }},
    {"own_prior", Type::Csv, "the own prior's table", [](const AttentionOptions& o) { return o.ownPrior; },
     [](const AttendResult& r, views::FigureFormat) { return r.run.ownPriorCsv(); }},
    {"expert_usage", Type::Figure, "the expert usage", [](const AttentionOptions& o) { return o.expertUsage; },
     [](const AttendResult& r, views::FigureFormat f) { return r.run.expertUsageFigure(f); }},
    {"expert_usage", Type::Csv, "the expert usage table", [](const AttentionOptions& o) { return o.expertUsage; },
     [](const AttendResult& r, views::FigureFormat) { return r.run.expertUsageCsv(); }},
    {"expert_usage", Type::Json, "the expert usage per layer", [](const AttentionOptions& o) { return o.expertUsage; },
     [](const AttendResult& r, views::FigureFormat) { return r.run.expertUsageJson(); }},
    {"masks", Type::Figure, "the masks", [](const AttentionOptions& o) { return o.masks; },
     [](const AttendResult& r, views::FigureFormat f) { return r.run.masksFigure(f); }},
    {"masks", Type::Json, "the masks per kind of layer", [](const AttentionOptions& o) { return o.masks; },
     [](const AttendResult& r, views::FigureFormat) { return QJsonDocument(r.run.masksJson).toJson(QJsonDocument::Compact); }},
    {"tokens", Type::Figure, "the per-token maps", [](const AttentionOptions& o) { return o.perToken; },
     [](const AttendResult& r, views::FigureFormat f) { return r.run.tokenSheet(f); }},
    {"tokens", Type::Json, "the per-token list", [](const AttentionOptions& o) { return o.perToken; },
     [](const AttendResult& r, views::FigureFormat) { return r.run.tokensJson(); }},
    {"difference", Type::Png, "the difference map", [](const AttentionOptions& o) { return o.difference; },
     [](const AttendResult& r, views::FigureFormat) { return views::encodePng(r.run.difference, r.run.summary); }},
    {"relevancy", Type::Png, "the relevancy map", [](const AttentionOptions& o) { return o.relevancy; },
     [](const AttendResult& r, views::FigureFormat) { return views::encodePng(r.run.relevancyMap, r.run.summary); }},
    // Every run's own files.
    {"heatmap", Type::Png, "heatmap", always,
     [](const AttendResult& r, views::FigureFormat) { return views::encodePng(r.run.heatmapFigure, r.run.summary); }},
    {"summary", Type::Json, "summary", always,
     [](const AttendResult& r, views::FigureFormat) { return QJsonDocument(r.run.summary).toJson(); }},
    {"positions", Type::Csv, "positions", always, [](const AttendResult& r, views::FigureFormat) { return r.run.positionsCsv(); }},
    {"attention", Type::Safetensors, "attention", always, [](const AttendResult& r, views::FigureFormat) { return r.run.tensorFile(); }},
    {"answer", Type::Text, "answer", always, [](const AttendResult& r, views::FigureFormat) { return r.run.answer.toUtf8() + "\n"; }},
};

QStringList extensions(Type type)
{
    switch (type) {
    case Type::Figure: return {".png", ".svg", ".pdf"};
    case Type::Png: return {".png"};
    case Type::Csv: return {".csv"};
    case Type::Json: return {".json"};
    case Type::Text: return {".txt"};
    case Type::Safetensors: return {".safetensors"};
    }
    return {};
}

} // namespace

const std::vector<AttendOutput>& attendOutputs()
{
    return kOutputs;
}

QString attendFileName(const AttendOutput& row, views::FigureFormat figureFormat)
{
    if (row.type != Type::Figure)
        return row.stem + extensions(row.type).front();
    return row.stem +
        QString(figureFormat == views::FigureFormat::Svg       ? ".svg"
                    : figureFormat == views::FigureFormat::Pdf ? ".pdf"
                                                               : ".png");
}

QStringList attendFileNames(const AttendOutput& row)
{
    QStringList names;
    for (const QString& extension : extensions(row.type))
        names << row.stem + extension;
    return names;
}

const AttendOutput& attendOutputFor(const QString& output, const AttentionOptions& options)
{
    const QString name = output.toLower();
    QStringList offered;
    for (const AttendOutput& row : kOutputs) {
        if (!row.enabled(options))
            continue;
        const QStringList types = extensions(row.type);
        for (const QString& extension : types)
            if (name.endsWith(extension))
                return row;
        offered << types.join('/') + " (" + row.what + ")";
    }
    throw UsageError("attention items write " + offered.join(", ").toStdString() + "; this item's flags give no output for '" +
                     output.toStdString() + "'");
}

} // namespace ropescope::cli
