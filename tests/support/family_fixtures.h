#pragma once
// What the model suites read from a family's tiny fixture (tests/data/fixtures, README there), written once:
// its config as given or with one text_config key changed, the one-line refusal a config gets, and the run a
// case's inputs ask for. test_family_parity (the families' rows) and test_moe (the MoE block's own cases) use them.
#include "core/model/engine/model_config.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"
#include "tests/support/parity.h"

#include <QByteArray>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QJsonValue>
#include <QString>

namespace ropescope::test {

inline QByteArray configOf(const QString& family)
{
    QFile f(fixture(family + "/config.json"));
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// The fixture's config with text_config[key] = value (a null value removes the key).
inline QByteArray withTextKey(const QString& family, const char* key, const QJsonValue& value)
{
    QJsonObject root = QJsonDocument::fromJson(configOf(family)).object(), text = root["text_config"].toObject();
    if (value.isNull())
        text.remove(key);
    else
        text[key] = value;
    root["text_config"] = text;
    return QJsonDocument(root).toJson();
}

// What parsing `json` (as m/config.json) is refused with, or "(loaded)".
inline QString refusal(const QByteArray& json)
{
    try {
        model::parseModelConfig(json, "m/config.json");
    } catch (const model::BadInputFile& e) {
        return e.what();
    }
    return "(loaded)";
}

// The run a case's inputs ask for: the ids, their token types where given, the prompt's images and its video (the
// processor's [T, h, w] rows; the engine splits them per frame where transformers does).
inline model::ForwardRequest requestFor(const model::SafeTensors& inputs)
{
    model::ForwardRequest req;
    req.inputIds = model::toTorch(inputs, "input_ids").flatten();
    if (inputs.find("mm_token_type_ids"))
        req.tokenTypes = model::toTorch(inputs, "mm_token_type_ids").flatten();
    if (inputs.find("pixel_values")) {
        req.pixelValues = model::toTorch(inputs, "pixel_values");
        req.imageGridThw = model::toTorch(inputs, "image_grid_thw");
    }
    if (inputs.find("pixel_values_videos")) {
        req.videoPixelValues = model::toTorch(inputs, "pixel_values_videos");
        req.videoGridThw = model::toTorch(inputs, "video_grid_thw");
    }
    return req;
}

inline model::ForwardRequest requestFor(const QString& family, const QString& suffix = "")
{
    return requestFor(model::SafeTensors::open(fixture(family + "/inputs" + suffix + ".safetensors")));
}

} // namespace ropescope::test
