#include "core/io/position_table_io.h"

#include "core/io/scheme_codec.h"
#include "core/geometry/scheme_parameters.h"

#include <QJsonArray>
#include <QJsonDocument>

#include <charconv>

namespace ropescope::io {
using namespace geometry;

QByteArray formatNumber(double value)
{
    if (value == 0.0)
        value = 0.0; // drops the sign of -0
    char buffer[32];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    return QByteArray(buffer, static_cast<int>(result.ptr - buffer));
}

QByteArray positionTableCsv(const PositionTable& table)
{
    QByteArray out = "index,modality,segment,frame,row,col";
    for (int c = 0; c < table.components(); ++c)
        out += ",p" + QByteArray::number(c);
    out += '\n';
    out.reserve(out.size() + table.size() * (24 + 12 * table.components()));
    for (int i = 0; i < table.size(); ++i) {
        const auto k = static_cast<size_t>(i);
        out += QByteArray::number(i);
        out += ',';
        out += modalityName(table.modality[k]);
        out += ',';
        out += QByteArray::number(table.segment[k]);
        if (table.isText(i)) {
            out += ",,,";
        } else {
            out +=
                ',' + QByteArray::number(table.frame[k]) + ',' + QByteArray::number(table.row[k]) + ',' + QByteArray::number(table.col[k]);
        }
        for (int c = 0; c < table.components(); ++c) {
            out += ',';
            out += formatNumber(table.positions(i, c));
        }
        out += '\n';
    }
    return out;
}

static QJsonArray intArray(const std::vector<int>& values)
{
    QJsonArray a;
    for (int v : values)
        a.append(v);
    return a;
}

QByteArray positionTableJson(const PositionTable& table, const QJsonObject& parameters)
{
    QJsonObject root;
    root["scheme"] = QString::fromStdString(table.schemeLabel());
    root["layout"] = QString::fromStdString(table.layout.toString());
    root["parameters"] = parameters;
    QJsonArray names;
    for (const std::string& n : table.componentLabels())
        names.append(QString::fromStdString(n));
    root["component_names"] = names;

    QJsonObject allocation;
    allocation["kind"] = allocationKindName(table.allocation.kind);
    allocation["components"] = table.allocation.components;
    if (table.allocation.kind != FrequencyAllocation::Kind::Interleaved && table.allocation.kind != FrequencyAllocation::Kind::Distributed)
        allocation["sections"] = intArray(table.allocation.sections);
    root["allocation"] = allocation;
    root["rotary"] = QJsonObject{{"theta", table.rotary.theta}, {"head_dim", table.rotary.headDim}};
    if (table.rotary.partial != 1.0) {
        QJsonObject rotary = root["rotary"].toObject();
        rotary["partial_rotary"] = table.rotary.partial;
        rotary["rotary_dim"] = table.rotary.rotaryDim();
        if (table.rotary.proportional) // Gemma 4's full layers: frequencies over the whole head, the rest unturned
            rotary["proportional"] = true;
        root["rotary"] = rotary;
    }
    if (table.rotary.linearFactor != 1.0) { // Gemma 3's full layers: every frequency / factor
        QJsonObject rotary = root["rotary"].toObject();
        rotary["linear_factor"] = table.rotary.linearFactor;
        root["rotary"] = rotary;
    }
    if (table.rotary.pairing != RotaryPairing::Half) { // half split: files stay as they were
        QJsonObject rotary = root["rotary"].toObject();
        rotary["pairing"] = rotaryPairingName(table.rotary.pairing);
        root["rotary"] = rotary;
    }

    QJsonArray tokens;
    for (int i = 0; i < table.size(); ++i) {
        const auto k = static_cast<size_t>(i);
        const bool text = table.isText(i);
        QJsonArray p;
        for (int c = 0; c < table.components(); ++c)
            p.append(table.positions(i, c) == 0.0 ? 0.0 : table.positions(i, c));
        tokens.append(QJsonObject{
            {"index", i},
            {"modality", modalityName(table.modality[k])},
            {"segment", table.segment[k]},
            {"frame", text ? QJsonValue() : QJsonValue(table.frame[k])},
            {"row", text ? QJsonValue() : QJsonValue(table.row[k])},
            {"col", text ? QJsonValue() : QJsonValue(table.col[k])},
            {"p", p},
        });
    }
    root["tokens"] = tokens;
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

QJsonObject schemeParamsJson(const SchemeParams& p)
{
    const FrequencyAllocation allocation = allocationFor(p);
    QJsonObject o;
    o["scheme"] = QString::fromStdString(schemeLabel(p));
    if (p.custom)
        o["scheme_file"] = customSchemeJson(*p.custom);
    o["theta"] = p.rotary.theta;
    o["head_dim"] = p.rotary.headDim;
    o["allocation"] = QString::fromStdString(allocation.toString());
    if (p.custom)
        return o; // the file placed the tokens: the built-ins' parameters did not apply
    // The scheme parameters it reads, from their table (the value in use: a frame spacing left unset is the
    // scheme's own; Qwen2-VL's time reads no seconds per grid); then what the allocation derives from them.
    for (const SchemeParameter& row : schemeParameters())
        if (reads(row, p))
            o[QString::fromUtf8(row.key)] = parameterJson(row, p);
    if (p.kind == SchemeKind::VideoRopePlus)
        o["time_theta"] = p.rotary.theta * allocation.temporalThetaScale;
    if (p.kind == SchemeKind::XdRope)
        o["base"] = p.rotary.theta * allocation.thetaScale; // the theta every pair turns at
    if (allocation.perHead())
        o["kv_heads"] = p.rotary.heads;
    return o;
}

} // namespace ropescope::io
