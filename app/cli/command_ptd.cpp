#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/output.h"
#include "app/cli/freqs_report.h"
#include "app/cli/ptd_report.h"
#include "core/geometry/errors.h"
#include "core/geometry/metrics.h"
#include "core/geometry/paper_table1.h"
#include "core/io/position_table_io.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <cmath>

namespace ropescope::cli {
using namespace geometry;

namespace {

QByteArray paperTable1Text()
{
    QByteArray out = "Circle-RoPE paper, Table 1: PTD (eq. 1) with 9 image tokens (3x3) and 5 text tokens\n\n";
    out += QByteArray("scheme").leftJustified(11) + QByteArray("positions").leftJustified(66) + "PTD       paper\n";
    for (const Table1Row& r : paperTable1()) {
        out += QByteArray::fromStdString(r.label).leftJustified(11);
        out += QByteArray::fromStdString(r.positions).leftJustified(66);
        out += QByteArray::number(r.ptd, 'f', 4).leftJustified(10);
        out += QByteArray::fromStdString(r.paper) + '\n';
    }
    out += "\nThe paper's 'Spatial' row continues the 1-D count for text (k,k), k=9..13, in 2-D (h,w).\n"
           "Qwen2-VL's real layout is 3-D (t,h,w) and resumes text at max+1 = 3, right after the image:\n"
           "the bias is still there, just smaller (0.48 vs 0.64). Only the Circle-RoPE cone removes it.\n";
    return out;
}

QJsonObject paperTable1Json()
{
    QJsonArray rows;
    for (const Table1Row& r : paperTable1())
        rows.append(QJsonObject{{"scheme", QString::fromStdString(r.label)},
                                {"positions", QString::fromStdString(r.positions)},
                                {"ptd", r.ptd},
                                {"paper", QString::fromStdString(r.paper)}});
    return {{"paper_table1", rows}};
}

QString blockLabel(const PositionTable& t, const VisualBlock& b)
{
    const Segment& seg = t.layout.segments[static_cast<size_t>(b.segment)];
    QString label =
        QString("segment %1 %2 %3x%4").arg(b.segment).arg(seg.kind == SegmentKind::Video ? "video" : "image").arg(b.rows).arg(b.cols);
    if (seg.kind == SegmentKind::Video)
        label += QString(" frame %1").arg(b.frame);
    return label;
}

QByteArray num(double v)
{
    return QByteArray::number(std::abs(v) < 5e-13 ? 0.0 : v, 'f', 6);
}

} // namespace

namespace {

struct Measured {
    PtdResult ptd;
    Crowding crowding;
};

Measured measure(const PositionTable& table)
{
    try {
        return {computePtd(table), visualCrowding(table)};
    } catch (const InvalidInput& e) {
        throw UsageError(std::string("--layout: ") + e.what());
    }
}

} // namespace

QJsonObject ptdReport(const GeometryRequest& req, const PositionTable& table, bool perToken)
{
    const auto [ptd, crowding] = measure(table);
    QJsonObject root{{"scheme", QString::fromStdString(table.schemeLabel())},
                     {"layout", QString::fromStdString(table.layout.toString())},
                     {"parameters", io::schemeParamsJson(req.effectiveParams())},
                     {"ptd", ptd.mean}};
    QJsonArray blocks;
    for (size_t b = 0; b < table.blocks.size(); ++b)
        blocks.append(QJsonObject{{"block", blockLabel(table, table.blocks[b])}, {"ptd", ptd.perBlock[b]}});
    root["per_block"] = blocks;
    root["collisions"] = static_cast<double>(crowding.collisions);
    root["min_pair_distance"] = std::isfinite(crowding.minPairDistance) ? QJsonValue(crowding.minPairDistance) : QJsonValue();
    if (perToken) {
        QJsonArray tokens;
        for (size_t i = 0; i < table.textTokens.size(); ++i) {
            const auto row = static_cast<Eigen::Index>(i);
            const auto& p = ptd.profiles;
            tokens.append(QJsonObject{{"index", table.textTokens[i]},
                                      {"deviation", ptd.perToken(row)},
                                      {"min", p(row, 0)},
                                      {"mean", p(row, 1)},
                                      {"max", p(row, 2)},
                                      {"std", p(row, 3)}});
        }
        root["per_token"] = tokens;
    }
    return root;
}

int runPtd(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    addRotaryOptions(parser);
    parser.addOptions({
        {"paper-table1", "Print the Circle-RoPE paper's Table 1, recomputed, with Qwen2-VL's real layout."},
        {"per-token", "Also print each text token's deviation and distance profile."},
        {"json", "Print JSON instead of text."},
        {"output", "Write to this file (atomically) instead of standard output.", "F"},
    });
    parseOrThrow(parser, args);
    const bool json = parser.isSet("json");
    const QString output = parser.value("output");

    if (parser.isSet("paper-table1")) {
        if (parser.isSet("scheme") || parser.isSet("layout"))
            throw UsageError("--paper-table1 uses the paper's own layouts; drop --scheme/--layout");
        writeOutput(output, json ? QJsonDocument(paperTable1Json()).toJson() : paperTable1Text());
        return 0;
    }

    GeometryRequest req = parseGeometryOptions(parser, parseRotaryOptions(parser));
    applyRotaryForms(parser, req);
    const PositionTable table = req.build();
    const bool perToken = parser.isSet("per-token");
    // Which dims rotate at which frequencies, where that is not the whole head at plain frequencies or a model gave it
    // (Gemma 4's full layers: a quarter of a 512-wide head, proportionally).
    const bool rotary = parser.isSet("model") || rotaryWorthShowing(table.rotary);
    if (json) {
        QJsonObject report = ptdReport(req, table, perToken);
        if (rotary)
            report["rotary"] = rotaryJson(table);
        writeOutput(output, QJsonDocument(report).toJson());
        return 0;
    }
    const auto [ptd, crowding] = measure(table);

    QByteArray out =
        "scheme " + QByteArray::fromStdString(table.schemeLabel()) + ", layout " + QByteArray::fromStdString(table.layout.toString());
    if (req.age)
        out += ", AGE " + QByteArray::fromStdString(req.age->name) + " layer " + QByteArray::number(req.layer);
    out += "\n";
    if (rotary)
        out += rotaryText(table);
    out += "PTD " + num(ptd.mean) + "\n";
    for (size_t b = 0; b < table.blocks.size(); ++b)
        out += "  " + blockLabel(table, table.blocks[b]).toUtf8() + ": " + num(ptd.perBlock[b]) + "\n";
    out += "visual tokens " + QByteArray::number(table.visualTokenCount()) + ", collisions " + QByteArray::number(crowding.collisions) +
        ", min pair distance ";
    out += std::isfinite(crowding.minPairDistance) ? QByteArray::number(crowding.minPairDistance, 'g', 6) + " (tokens " +
            QByteArray::number(crowding.tokenA) + ", " + QByteArray::number(crowding.tokenB) + ")\n"
                                                   : QByteArray("n/a\n");
    if (perToken) {
        out += "\ntoken  deviation  dist_min   dist_mean  dist_max   dist_std\n";
        for (size_t i = 0; i < table.textTokens.size(); ++i) {
            const auto row = static_cast<Eigen::Index>(i);
            const auto& p = ptd.profiles;
            out += QByteArray::number(table.textTokens[i]).leftJustified(7) + num(ptd.perToken(row)).leftJustified(11) +
                num(p(row, 0)).leftJustified(11) + num(p(row, 1)).leftJustified(11) + num(p(row, 2)).leftJustified(11) + num(p(row, 3)) +
                "\n";
        }
    }
    writeOutput(output, out);
    return 0;
}

} // namespace ropescope::cli
