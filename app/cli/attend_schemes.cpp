#include "app/cli/attend_schemes.h"

#include "app/reports/attention_tables.h"
#include "app/reports/map_pictures.h"

#include "app/cli/cli_error.h"
#include "app/cli/output.h"
#include "core/model/analysis/attention_stats.h"
#include "views/charts/attention_figures.h"

#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>

namespace ropescope::cli {
namespace {

// "circle:alpha=0.3:age=strategy_4" -> the scheme flags of a model run, read by the same parser.
SchemeRequest parseEntry(const QString& entry, int layers)
{
    const QStringList parts = entry.split(':');
    if (parts.front().isEmpty())
        throw UsageError("--schemes: an entry has no scheme name");
    QStringList args{"schemes", "--scheme", parts.front()};
    for (qsizetype i = 1; i < parts.size(); ++i) {
        const qsizetype eq = parts[i].indexOf('=');
        const QString key = parts[i].left(eq), value = parts[i].mid(eq + 1);
        if (eq <= 0 || value.isEmpty())
            throw UsageError("--schemes: '" + entry.toStdString() + "': expected key=value after ':', got '" + parts[i].toStdString() +
                             "'");
        // help / h would print the help and end the run as a success: not a parameter either.
        if (key == "scheme" || key == "layout" || key == "help" || key == "h" || key == "help-all" || key == "?" || key.startsWith('-'))
            throw UsageError("--schemes: '" + entry.toStdString() + "': '" + key.toStdString() + "' is not a scheme parameter");
        // A Python scheme's own parameters (its PARAMETERS) go to --param; the rotary flags stay flags.
        if (parts.front().endsWith(".py") && !QStringList{"allocation", "mrope-section", "kv-heads"}.contains(key))
            args << "--param" << key + "=" + value;
        else
            args << "--" + key << QString(value).replace('/', ',');
    }
    QCommandLineParser parser;
    addGeometryOptions(parser);
    try {
        parseOrThrow(parser, args);
        return parseModelSchemeOptions(parser, layers);
    } catch (const UsageError& e) {
        throw UsageError("--schemes: '" + entry.toStdString() + "': " + e.what());
    }
}

} // namespace

std::vector<model::SchemeEntry> parseSchemeEntries(const QStringList& entries, int layers)
{
    std::vector<model::SchemeEntry> out;
    for (const QString& entry : entries) {
        const SchemeRequest r = parseEntry(entry, layers);
        // A scheme file is labelled by its name, not its path (which titles and legends cut at both ends).
        QString label = entry;
        if (const QString file = entry.section(':', 0, 0); file.endsWith(".py"))
            label = QFileInfo(file).fileName() + entry.mid(file.size());
        out.push_back({label, modelScheme(r)});
    }
    return out;
}

AttentionAsAsked runAttentionAsAsked(ModelOnDevice& model, const QCommandLineParser& parser, const AttentionOptions& options)
{
    const int layers = model.vlm->config().text.layers;
    const std::vector<model::SchemeEntry> entries = parseSchemeEntries(options.schemes, layers);
    AttentionAsAsked out{
        runAttentionOnce(model, options,
                         entries.empty() ? modelScheme(parseModelSchemeOptions(parser, layers, model::ownSchemeKind(model.vlm->config())))
                                         : entries.front().scheme),
        std::nullopt};
    if (!entries.empty()) {
        out.compared = runAttentionSchemes(model, options, entries, out.run.run);
        out.run.summary["schemes"] = out.compared->rows;
    }
    return out;
}

SchemesOutcome runAttentionSchemes(ModelOnDevice& m, const AttentionOptions& o, const std::vector<model::SchemeEntry>& schemes,
                                   const model::AttentionRun& first)
{
    const model::AttentionQuery query = attentionQuery(m, o);
    const int layer = heatmapLayer(o, first.layers);
    SchemesOutcome out;
    out.comparison = model::compareSchemes(
        m, query, schemes, layer,
        [&](int done, int total) {
            if (done < total)
                std::fprintf(stderr, "scheme %d/%d: %s\n", done + 1, total, qPrintable(schemes[static_cast<size_t>(done)].label));
            return true;
        },
        &first);
    for (const model::SchemeRow& r : out.comparison.rows) {
        QJsonArray shares;
        for (double share : r.imageShares)
            shares.append(share);
        out.rows.append(QJsonObject{{"scheme", r.entry.label},
                                    {"answer", r.answer},
                                    {"untrained", QString::fromStdString(r.untrained)},
                                    {"ptd", r.ptd},
                                    {"prior_spread", r.priorSpread},
                                    {"shift_from_first", r.shift},
                                    {"image_mass", r.stats.imageMass},
                                    {"normalized_entropy", r.stats.normalizedEntropy},
                                    {"top1_share", r.stats.topShare},
                                    {"border_share", r.stats.borderShare},
                                    {"first_token_share", r.stats.firstShare},
                                    {"image_shares", shares}});
    }
    return out;
}

QByteArray SchemesOutcome::figure(views::FigureFormat format, const views::HeatmapOptions& heat) const
{
    const model::SchemeComparison& c = comparison;
    views::MapSheet sheet;
    sheet.title = QString("one prompt, %1 schemes - layer %2, mean over heads and question tokens").arg(c.rows.size()).arg(c.layer);
    sheet.columns = static_cast<int>(c.rows.size());
    for (const model::SchemeRow& r : c.rows)
        sheet.maps.push_back({views::attentionOverlay(reports::mapPictures(c.images), r.map, heat), r.caption()});
    if (std::any_of(c.rows.begin(), c.rows.end(), [](const model::SchemeRow& r) { return !r.untrained.empty(); }))
        sheet.title += " (* not the scheme the model was trained with)";
    const QSize size = views::mapSheetSize(
        sheet, std::clamp(views::stripSize(reports::mapPictures(c.images)).width(), 200, 280 * static_cast<int>(c.images.size())));
    const QJsonObject meta{{"figure", "schemes side by side"}, {"layout", c.layout}, {"layer", c.layer}, {"schemes", rows}};
    return views::renderFigure([&](QPainter& p, const QRectF& r) { views::paintMapSheet(p, r, sheet); }, size, format, meta);
}

QByteArray SchemesOutcome::csv() const
{
    return reports::schemesCsv(comparison);
}

} // namespace ropescope::cli
