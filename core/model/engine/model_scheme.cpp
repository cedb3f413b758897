#include "core/model/engine/model_scheme.h"

#include "core/io/input_file.h"
#include "core/io/scheme_codec.h"

#include "core/geometry/age.h"
#include "core/geometry/circle_projection.h"
#include "core/geometry/errors.h"
#include "core/geometry/scheme.h"
#include "core/geometry/scheme_parameters.h"

#include <QDir>
#include <QJsonDocument>

#include <set>

namespace ropescope::model {

QString schemeLabel(const ModelScheme& scheme)
{
    QString label = QString::fromStdString(geometry::schemeLabel(scheme.params));
    if (!scheme.age.empty())
        label += " + AGE " + QString::fromStdString(scheme.age);
    return label;
}

QJsonObject schemeToJson(const ModelScheme& m)
{
    QJsonObject o;
    io::writeSchemeParams(o, m.params);
    o["age"] = QString::fromStdString(m.age);
    return o;
}

bool sameScheme(const ModelScheme& a, const ModelScheme& b, int layers)
{
    return schemeDifference(a, b, layers).empty();
}

std::string schemeDifference(const ModelScheme& a, const ModelScheme& b, int layers)
{
    auto pattern = [layers](const std::string& age) {
        return age.empty() ? std::string() : geometry::parseAgeSchedule(age, layers).pattern();
    };
    // A scheme file is the same scheme when its content (hash) and parameter values are.
    const auto& ca = a.params.custom;
    const auto& cb = b.params.custom;
    if (ca || cb) {
        if (!ca || !cb || ca->sha256 != cb->sha256 || ca->values != cb->values)
            return "scheme " + geometry::schemeLabel(a.params) + ", trained " + geometry::schemeLabel(b.params);
    } else if (a.params.kind != b.params.kind)
        return std::string("scheme ") + geometry::schemeName(a.params.kind) + ", trained " + geometry::schemeName(b.params.kind);
    // The scheme's parameters, from their table (core/geometry/scheme_parameters.cpp), in its order: each row the
    // used scheme reads, and Circle-RoPE's where an AGE layer uses Circle-RoPE. The rows a model sets itself
    // for every scheme (Vlm's run parameters: Qwen2.5-VL's time index, no xd-rope newline column) are not a
    // difference of the scheme asked for.
    static const std::set<std::string> kSetByTheModel{"temporal", "second_per_grid", "tokens_per_second", "newline_column"};
    geometry::SchemeParams p = a.params, q = b.params, asCircle = a.params;
    asCircle.kind = geometry::SchemeKind::Circle;
    // Only the text axis's direction places tokens: (2,2,2) is (1,1,1).
    if ((geometry::unitTextAxis(p.circle.textVector) - geometry::unitTextAxis(q.circle.textVector)).norm() <= 1e-12)
        q.circle.textVector = p.circle.textVector;
    for (const geometry::SchemeParameter& row : geometry::schemeParameters()) {
        const bool read = geometry::reads(row, p) || (!a.age.empty() && geometry::reads(row, asCircle));
        if (read && !kSetByTheModel.count(row.key) && !row.equal(p, q))
            return row.label + (" " + geometry::valueText(row, a.params) + ", trained " + geometry::valueText(row, b.params));
    }
    // The allocation as it applies (an explicit "sectioned" is the default's sectioned[16,24,24]).
    const std::string used = geometry::allocationFor(a.params).toString(), trained = geometry::allocationFor(b.params).toString();
    if (used != trained)
        return "frequency allocation " + used + ", trained " + trained;
    if (pattern(a.age) != pattern(b.age))
        return "AGE " + (a.age.empty() ? std::string("none") : a.age) + ", trained " + (b.age.empty() ? std::string("none") : b.age);
    return {};
}

ModelScheme schemeFromJson(const QJsonObject& o)
{
    // Records written before a key existed mean its default (text axis (1,1,1), the scheme's own
    // allocation and sections, ...).
    const io::JsonFields f(o, "config.json: ropescope");
    ModelScheme m;
    m.params = io::readSchemeParams(f);
    m.age = f.text("age", "");
    return m;
}

namespace {

// The "ropescope" section of a model's config.json; empty when there is none (a Hub checkpoint) or the
// file cannot be read (loading the model reports that).
QJsonObject recordedSection(const QString& modelDir)
{
    try {
        return QJsonDocument::fromJson(io::readInputFile(QDir(modelDir).filePath("config.json"), 16 << 20, "model config"))
            .object()["ropescope"]
            .toObject();
    } catch (const io::IoError&) {
        return {};
    }
}

} // namespace

ModelScheme recordedScheme(const QString& modelDir, geometry::SchemeKind unrecorded)
{
    const QJsonObject section = recordedSection(modelDir); // config.json read once
    if (!section.contains("scheme")) {                     // a Hub checkpoint: its family's own placement
        ModelScheme m;
        m.params = geometry::defaultSchemeParams(unrecorded);
        return m;
    }
    return schemeFromJson(section);
}

QJsonObject recordedTraining(const QString& modelDir)
{
    return recordedSection(modelDir)["training"].toObject();
}

bool isTaskModel(const QString& modelDir)
{
    return recordedSection(modelDir)["task"].toString().startsWith("shapes-and-colours");
}

} // namespace ropescope::model
