#include "app/cli/freqs_report.h"

#include "app/cli/cli_error.h"
#include "core/geometry/frequency.h"
#include "core/geometry/frequency_usage.h"
#include "core/io/position_table_io.h"
#include "views/charts/chart_export.h"
#include "views/charts/readout_charts.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace ropescope::cli {
namespace {

using geometry::FrequencyUsage;

// The axis driving a pair; "none" for a pair that does not turn (Gemma 4's proportional rotary).
QString axisName(const FrequencyUsage& u, const FrequencyUsage::Pair& p)
{
    return p.component < 0 ? QString("none") : QString::fromStdString(u.axes[static_cast<size_t>(p.component)]);
}

QByteArray usageCsv(const FrequencyUsage& u)
{
    QByteArray out = "pair,axis,inv_freq,wavelength,turn_across_grid,use,head_share,dim_a,dim_b\n";
    for (const FrequencyUsage::Pair& p : u.pairs)
        out += QByteArray::number(p.index) + "," + axisName(u, p).toUtf8() + "," + QByteArray::number(p.invFreq, 'g', 17) + "," +
            QByteArray::number(p.wavelength, 'g', 17) + "," + QByteArray::number(p.turnAcross, 'g', 17) + "," + geometry::useName(p.use) +
            "," + QByteArray::number(p.headShare, 'g', 17) + "," + QByteArray::number(p.dimA) + "," + QByteArray::number(p.dimB) + "\n";
    return out;
}

QJsonObject usageJson(const FrequencyUsage& u)
{
    QJsonArray pairs, distances;
    for (const FrequencyUsage::Pair& p : u.pairs)
        pairs.append(QJsonObject{{"pair", p.index},
                                 {"axis", axisName(u, p)},
                                 {"inv_freq", p.invFreq},
                                 {"wavelength", std::isfinite(p.wavelength) ? QJsonValue(p.wavelength) : QJsonValue()}, // null: never turns
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
                     {"rotary",
                      QJsonObject{{"theta", table.rotary.theta},
                                  {"head_dim", table.rotary.headDim},
                                  {"rotary_dim", table.rotary.rotaryDim()},
                                  {"pairing", geometry::rotaryPairingName(table.rotary.pairing)},
                                  {"proportional", table.rotary.proportional},
                                  {"linear_factor", table.rotary.linearFactor}}}};
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

bool rotaryWorthShowing(const geometry::RotaryConfig& r)
{
    return r.proportional || r.linearFactor != 1.0 || r.unrotatedDims() > 0;
}

QJsonObject rotaryJson(const geometry::PositionTable& table)
{
    const geometry::RotaryConfig& r = table.rotary;
    const FrequencyUsage u = geometry::frequencyUsage(table);
    QJsonArray pairs;
    for (const FrequencyUsage::Pair& p : u.pairs)
        pairs.append(
            QJsonObject{{"pair", p.index}, {"axis", axisName(u, p)}, {"inv_freq", p.invFreq}, {"dims", QJsonArray{p.dimA, p.dimB}}});
    return QJsonObject{{"theta", r.theta},
                       {"head_dim", r.headDim},
                       {"rotary_dim", r.rotaryDim()},
                       {"pairing", geometry::rotaryPairingName(r.pairing)},
                       {"proportional", r.proportional},
                       {"linear_factor", r.linearFactor},
                       {"allocation", QString::fromStdString(table.allocation.toString())},
                       {"pairs", pairs}};
}

QByteArray rotaryText(const geometry::PositionTable& table)
{
    const geometry::RotaryConfig& r = table.rotary;
    const std::vector<double> inv = geometry::inverseFrequencies(r);
    QByteArray out = "rotary: theta " + QByteArray::number(r.theta, 'g', 10) + ", head_dim " + QByteArray::number(r.headDim) + ", " +
        QByteArray::number(r.rotaryDim()) + " dims rotate";
    const int pairs = r.halfDim();
    if (r.pairing == geometry::RotaryPairing::Adjacent) {
        out += " on adjacent pairs (2j, 2j+1), j < " + QByteArray::number(pairs);
    } else {
        const int half = r.proportional ? r.headDim / 2 : pairs;
        out += ": dims 0-" + QByteArray::number(pairs - 1) + " and " + QByteArray::number(half) + "-" +
            QByteArray::number(half + pairs - 1) + " (pair j on dims j and j+" + QByteArray::number(half) + ")";
    }
    if (!inv.empty())
        out += ", inverse frequencies " + QByteArray::number(inv.front(), 'g', 6) + " .. " + QByteArray::number(inv.back(), 'g', 6) +
            (r.proportional ? " (theta^(-2j/" + QByteArray::number(r.headDim) + "), proportional: the head's other " +
                     QByteArray::number(r.headDim / 2 - pairs) + " pairs never turn)"
                            : QByteArray());
    if (r.linearFactor != 1.0)
        out += ", every frequency / " + QByteArray::number(r.linearFactor, 'g', 6) + " (linear scaling)";
    return out + "\nallocation " + QByteArray::fromStdString(table.allocation.toString()) + " over the " + QByteArray::number(pairs) +
        " rotated pairs\n";
}

} // namespace ropescope::cli
