#include "attend_run.h"

#include "cli_error.h"
#include "io/position_table_io.h"
#include "io/resource_paths.h"
#include "model/attend_request.h"
#include "model/attention_stats.h"
#include "model/bundled_model.h"
#include "model/image_processor.h"
#include "model/tensor_io.h"
#include "model_options.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>

#include <algorithm>

namespace ropescope::cli {

namespace {

std::vector<int> parseLayerList(const QString& text, int layers)
{
    std::vector<int> out;
    if (text.isEmpty() || text == "all") {
        for (int i = 0; i < layers; ++i)
            out.push_back(i);
        return out;
    }
    for (const QString& part : text.split(',')) {
        bool ok = false;
        const int v = part.trimmed().toInt(&ok);
        if (!ok || v < 0 || v >= layers)
            throw UsageError("--capture-layers: '" + part.toStdString() + "' is not a layer 0.." + std::to_string(layers - 1));
        out.push_back(v);
    }
    return out;
}

double option(const QCommandLineParser& p, const char* name, double fallback, double lo, double hi)
{
    if (!p.isSet(name))
        return fallback;
    const double v = parseNumber(p, name);
    if (!(v >= lo && v <= hi))
        throw UsageError(std::string("--") + name + ": expected " + std::to_string(lo) + " to " + std::to_string(hi));
    return v;
}

} // namespace

void addAttendOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"model", "Model folder (config.json, *.safetensors, tokenizer.json); default: the bundled mrope model.", "DIR"},
        {"image", "Image file (default: the bundled sample).", "IMG"},
        {"question", "The question about the image (default: the sample's).", "Q"},
        {"capture-layers", "Layers whose text->image attention to keep: all (default) or e.g. 0,5,27.", "L"},
        {"heatmap-layer", "Layer of the heatmap (default: the last captured).", "I"},
        {"head", "Heatmap head: mean (default), max, or an index.", "H"},
        {"max-new-tokens", "Answer length limit (default 32; 1 for models without a chat template, such as the bundled ones).", "N"},
        {"max-pixels", "Largest resized image in pixels (default: the model's, capped at 1280 merged tokens: 1280*28*28 for Qwen2-VL, 1280*32*32 for Qwen3-VL).", "P"},
        {"colormap", "jet (default) or viridis.", "C"},
        {"opacity", "Heat layer opacity 0..1 (default 0.55).", "A"},
        {"smoothing", "Gaussian sigma in grid cells (default 1).", "S"},
        {"gamma", "Power-law contrast (default 0.6).", "G"},
        {"difference", "Also run the model's own scheme: difference.png (where attention moved) and per-layer shift."},
        {"device", "cpu (default) or cuda.", "D"},
        {"dtype", "fp32 (default) or bf16.", "T"},
    });
}

AttendOptions parseAttendOptions(const QCommandLineParser& parser)
{
    if (parser.isSet("image") != parser.isSet("question"))
        throw UsageError("give --image and --question together (or neither, for the bundled sample)");
    AttendOptions o;
    o.modelDir = parser.isSet("model") ? parser.value("model") : io::bundledModel();
    o.imagePath = parser.isSet("image") ? parser.value("image") : io::sampleImage();
    o.question = parser.isSet("question") ? parser.value("question") : io::sampleQuestion();
    o.captureLayers = parser.value("capture-layers");
    o.head = parser.value("head");
    if (parser.isSet("heatmap-layer"))
        o.heatmapLayer = parseInteger(parser, "heatmap-layer");
    o.heat.opacity = option(parser, "opacity", o.heat.opacity, 0, 1);
    o.heat.smoothing = option(parser, "smoothing", o.heat.smoothing, 0, 50);
    o.heat.gamma = option(parser, "gamma", o.heat.gamma, 0.05, 20);
    const QString colormap = parser.value("colormap");
    if (colormap == "viridis")
        o.heat.colormap = views::HeatmapOptions::Colormap::Viridis;
    else if (!colormap.isEmpty() && colormap != "jet")
        throw UsageError("--colormap: expected jet or viridis");
    if (parser.isSet("max-new-tokens")) {
        o.maxNewTokens = parseInteger(parser, "max-new-tokens");
        if (o.maxNewTokens < 1 || o.maxNewTokens > 4096)
            throw UsageError("--max-new-tokens: expected 1 to 4096");
    }
    if (parser.isSet("max-pixels"))
        o.maxPixels = static_cast<int64_t>(option(parser, "max-pixels", 0, 56.0 * 56.0, 1e9));
    o.difference = parser.isSet("difference");
    o.device = parseDevice(parser);
    o.dtype = parseDtype(parser);
    return o;
}

std::unique_ptr<AttendModel> AttendModel::load(const QString& dir, torch::Device device, torch::Dtype dtype)
{
    auto m = std::make_unique<AttendModel>();
    m->dir = dir;
    m->device = device;
    m->dtype = dtype;
    m->vlm = std::make_unique<model::Vlm>(dir, device, dtype);
    m->tokenizer = std::make_unique<model::Tokenizer>(model::Tokenizer::load(QDir(dir).filePath("tokenizer.json")));
    return m;
}

AttendOutcome runAttendOnce(AttendModel& m, const AttendOptions& o, const SchemeRequest& scheme)
{
    const model::ModelConfig& cfg = m.vlm->config();
    model::PreprocessOptions pre = model::loadPreprocessOptions(m.dir, cfg);
    if (o.maxPixels)
        pre.maxPixels = *o.maxPixels;
    model::AttendRequest a = model::prepareAttend(*m.vlm, *m.tokenizer, model::loadImage(o.imagePath), o.question, pre, m.device);
    model::ForwardRequest& req = a.forward;
    req.scheme = scheme.params;
    req.age = scheme.age;
    req.capture.layers = parseLayerList(o.captureLayers, cfg.text.layers);
    if (o.maxNewTokens > 0)
        req.generate = o.maxNewTokens;
    model::HeadChoice head;
    try {
        head = model::HeadChoice::parse(o.head, cfg.text.heads);
    } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--") + e.what());
    }
    const int heatLayer = o.heatmapLayer.value_or(req.capture.layers.back());
    const auto where = std::find(req.capture.layers.begin(), req.capture.layers.end(), heatLayer);
    if (where == req.capture.layers.end())
        throw UsageError("--heatmap-layer: layer " + std::to_string(heatLayer) + " is not captured");
    const size_t heatIndex = static_cast<size_t>(where - req.capture.layers.begin());

    const model::ForwardResult r = m.vlm->run(req);
    const std::vector<int64_t> generated(r.generatedIds.data_ptr<int64_t>(), r.generatedIds.data_ptr<int64_t>() + r.generatedIds.numel());
    AttendOutcome out;
    out.answer = model::answerText(*m.tokenizer, generated, cfg.eos);
    const std::vector<float> grid = model::headMap(r.prefill.attentions[heatIndex], head);
    out.heatmap = views::attentionOverlay(a.resized, grid, a.gridRows, a.gridCols, o.heat);

    const model::ModelScheme own = model::recordedScheme(m.dir);
    const QString used = geometry::schemeName(scheme.params.kind);
    const QString trained = geometry::schemeName(own.params.kind);
    const bool untrained = !model::sameScheme({scheme.params, scheme.age ? scheme.age->pattern() : std::string()}, own, cfg.text.layers);
    // The same prompt under the scheme the model was trained with, for the difference map (prefill only).
    std::optional<model::ForwardResult> base;
    if (o.difference) {
        base = m.vlm->run(model::underScheme(req, own, cfg.text.layers));
        out.difference = views::attentionDifferenceOverlay(a.resized, model::headMap(base->prefill.attentions[heatIndex], head), grid, a.gridRows,
                                                           a.gridCols, o.heat);
    }
    QJsonObject& s = out.summary;
    s = QJsonObject{{"model", QFileInfo(m.dir).absoluteFilePath()},
                    {"image", QFileInfo(o.imagePath).absoluteFilePath()},
                    {"question", o.question},
                    {"answer", out.answer},
                    {"scheme", used},
                    {"trained_scheme", trained},
                    {"untrained_scheme", untrained},
                    {"layout", QString::fromStdString(r.layout.toString())},
                    {"grid", QJsonObject{{"rows", a.gridRows}, {"cols", a.gridCols}}},
                    {"heatmap_layer", heatLayer},
                    {"query_tokens", static_cast<int>(a.queryTokens.size())},
                    {"image_tokens", static_cast<int>(a.imageTokens.size())}};
    s["architecture"] = model::architectureName(cfg.architecture);
    s["allocation"] = QString::fromStdString(r.layerTables.front().allocation.toString());
    if (!r.deepstackEmbeds.empty()) {
        // Qwen3-VL: which vision blocks feed which decoder layers (added to the image tokens after the layer).
        QJsonArray blocks, layers;
        std::vector<int> inBlockOrder = cfg.vision.deepstackBlocks; // features come out in block order
        std::sort(inBlockOrder.begin(), inBlockOrder.end());
        for (size_t k = 0; k < r.deepstackEmbeds.size(); ++k) {
            blocks.append(inBlockOrder[k]);
            layers.append(static_cast<int>(k));
        }
        s["deepstack"] = QJsonObject{{"vision_blocks", blocks}, {"after_decoder_layers", layers}};
    }
    if (scheme.age)
        s["age"] = QString::fromStdString(scheme.age->pattern());
    if (base)
        s["difference_from"] = trained + (own.age.empty() ? QString() : " + AGE " + QString::fromStdString(own.age));
    QJsonArray generatedJson;
    for (int64_t id : generated)
        generatedJson.append(static_cast<double>(id));
    s["generated_ids"] = generatedJson;
    QJsonArray perLayer;
    for (size_t k = 0; k < req.capture.layers.size(); ++k) {
        const int layer = req.capture.layers[k];
        const model::AttentionStats st = model::attentionStats(r.prefill.attentions[k], a.gridRows, a.gridCols);
        QJsonObject entry{{"layer", layer},
                          {"scheme", QString::fromStdString(r.layerTables[static_cast<size_t>(layer)].scheme)},
                          {"image_mass", st.imageMass},
                          {"entropy", st.entropy},
                          {"normalized_entropy", st.normalizedEntropy},
                          {"centre_of_mass", QJsonObject{{"row", st.centreRow}, {"col", st.centreCol}}}};
        if (static_cast<size_t>(layer) < r.deepstackEmbeds.size())
            entry["deepstack_after"] = true;
        if (base) // total-variation distance between the two schemes' maps over the image
            entry["shift"] = model::attentionShift(base->prefill.attentions[k], r.prefill.attentions[k]);
        perLayer.append(entry);
    }
    s["per_layer"] = perLayer;

    // Kept as they are; encoded only for the outputs asked for (a batch heatmap item needs neither).
    out.attention = r.prefill.attentions;
    out.layers = std::vector<int64_t>(req.capture.layers.begin(), req.capture.layers.end());
    out.queryTokens = std::move(a.queryTokens);
    out.imageTokens = std::move(a.imageTokens);
    out.ids = std::move(a.ids);
    out.positions = r.layerTables.front();
    return out;
}

QByteArray AttendOutcome::tensorFile() const
{
    model::SafeTensorsWriter tensors;
    tensors.setMetadata("format", "pt");
    tensors.setMetadata("dims", "attention: [captured layers, heads, query tokens, image tokens]");
    model::addTensor(tensors, "attention", torch::stack(attention, 0).to(torch::kCPU));
    model::addTensor(tensors, "layers", torch::tensor(layers, torch::kInt64));
    model::addTensor(tensors, "query_tokens", torch::tensor(queryTokens, torch::kInt64));
    model::addTensor(tensors, "image_tokens", torch::tensor(imageTokens, torch::kInt64));
    model::addTensor(tensors, "input_ids", torch::tensor(ids, torch::kInt64));
    return tensors.bytes();
}

QByteArray AttendOutcome::positionsCsv() const
{
    return io::positionTableCsv(positions);
}

} // namespace ropescope::cli
