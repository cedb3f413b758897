#include "app/cli/freqs_report.h"

#include "app/cli/cli_error.h"
#include "core/geometry/frequency_usage.h"
#include "core/io/position_table_io.h"
#include "views/charts/chart_export.h"
#include "views/charts/readout_charts.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace ropescope::cli {
namespace {

using geometry::FrequencyUsage;

QByteArray usageCsv(const FrequencyUsage& u)
{
    QByteArray out = "pair,axis,inv_freq,wavelength,turn_across_grid,use,head_share,dim_a,dim_b\n";
    for (const FrequencyUsage::Pair& p : u.pairs)
        out += QByteArray::number(p.index) + "," + QByteArray::fromStdString(u.axes[static_cast<size_t>(p.component)]) + "," +
            QByteArray::number(p.invFreq, 'g', 17) + "," + QByteArray::number(p.wavelength, 'g', 17) + "," +
            QByteArray::number(p.turnAcross, 'g', 17) + "," + geometry::useName(p.use) + "," + QByteArray::number(p.headShare, 'g', 17) +
            "," + QByteArray::number(p.dimA) + "," + QByteArray::number(p.dimB) + "\n";
    return out;
}

QJsonObject usageJson(const FrequencyUsage& u)
{
    QJsonArray pairs, distances;
    for (const FrequencyUsage::Pair& p : u.pairs)
        pairs.append(QJsonObject{{"pair", p.index},
                                 {"axis", QString::fromStdString(u.axes[static_cast<size_t>(p.component)])},
                                 {"inv_freq", p.invFreq},
                                 {"wavelength", p.wavelength},
                                 {"turn_across_grid", p.turnAcross},
                                 {"use", geometry::useName(p.use)},
                                 {"head_share", p.headShare},
                                 {"dims", QJsonArray{p.dimA, p.dimB}}});
    for (double d : u.distances)
        distances.append(d);
    QJsonObject spans, decay;
    for (size_t a = 0; a < u.axes.size(); ++a) {
        const QString axis = QString::fromStdString(u.axes[a]);
        spans[axis] = u.spans[a];
        QJsonArray line;
        for (double v : u.decay[a])
            line.append(v);
        decay[axis] = line;
    }
    return QJsonObject{{"pairs", pairs}, {"spans", spans}, {"distances", distances}, {"decay", decay}};
}

} // namespace

QByteArray frequencyReport(const GeometryRequest& req, const QString& output, QSize figureSize, const QString& kind)
{
    const geometry::PositionTable table = req.build();
    const QString lower = kind.isEmpty() ? output.toLower() : "." + kind;
    if (lower.isEmpty() || lower.endsWith(".csv"))
        return usageCsv(geometry::frequencyUsage(table));
    QJsonObject meta{{"scheme", QString::fromStdString(table.schemeLabel())},
                     {"layout", QString::fromStdString(table.layout.toString())},
                     {"parameters", io::schemeParamsJson(req.effectiveParams())},
                     {"allocation", QString::fromStdString(table.allocation.toString())},
                     {"rotary", QJsonObject{{"theta", table.rotary.theta}, {"head_dim", table.rotary.headDim}}}};
    if (lower.endsWith(".json")) {
        const QJsonObject usage = usageJson(geometry::frequencyUsage(table));
        for (auto it = usage.begin(); it != usage.end(); ++it)
            meta[it.key()] = it.value();
        return QJsonDocument(meta).toJson();
    }
    views::FigureFormat format;
    try {
        format = views::figureFormatFor(output);
    } catch (const std::invalid_argument&) {
        throw UsageError("--output: freqs writes .csv, .json, .png, .svg or .pdf");
    }
    meta["chart"] = "frequencies";
    const views::FrequencyChart chart = views::frequencyChart(table);
    return views::renderFigure([&chart](QPainter& p, const QRectF& r) { views::paintFrequencyChart(p, r, chart); }, figureSize, format,
                               meta);
}

} // namespace ropescope::cli
