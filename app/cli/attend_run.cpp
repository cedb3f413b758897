#include "app/cli/attend_run.h"

#include "app/cli/cli_error.h"
#include "app/cli/model_options.h"
#include "app/reports/expert_usage_report.h"
#include "app/reports/map_pictures.h"
#include "core/io/position_table_io.h"
#include "core/io/resource_paths.h"
#include "core/model/analysis/attention_analyses.h"
#include "core/model/analysis/attention_request.h"
#include "core/model/analysis/attention_stats.h"
#include "core/model/analysis/scheme_comparison.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/model_scheme.h"
#include "core/model/engine/tensor_io.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>

#include <torch/types.h>

#include <cstdio>

#include <algorithm>

namespace ropescope::cli {

std::vector<int> parseLayerList(const QString& text, int layers)
{
    std::vector<int> out;
    if (text.isEmpty() || text == "all")
        return out; // every attention layer (the run leaves out Qwen3.5's DeltaNet layers)
    for (const QString& part : text.split(',')) {
        bool ok = false;
        const int v = part.trimmed().toInt(&ok);
        if (!ok || v < 0 || v >= layers)
            throw UsageError("--capture-layers: '" + part.toStdString() + "' is not a layer 0.." + std::to_string(layers - 1));
        out.push_back(v);
    }
    return out;
}

namespace {

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

void addAttentionOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"model", "Model folder (config.json, *.safetensors, tokenizer.json); default: the bundled mrope model.", "DIR"},
        {"image",
         "Image file (default: the bundled sample). Repeat it for a prompt of several images (up to 8): maps are drawn "
         "on each image side by side, on one colour scale, and summary.json gives each image's share per layer.",
         "IMG"},
        {"question", "The question about the image (default: the sample's).", "Q"},
        {"capture-layers", "Layers whose text->image attention to keep: all (default) or e.g. 0,5,27.", "L"},
        {"heatmap-layer", "Layer of the heatmap (default: the last captured).", "I"},
        {"head", "Heatmap head: mean (default), max, or an index.", "H"},
        {"max-new-tokens", "Answer length limit (default 32; 1 for models without a chat template, such as the bundled ones).", "N"},
        {"max-pixels",
         "Largest resized image in pixels (default: the model's, capped at 1280 merged tokens: 1280*28*28 for Qwen2-VL, 1280*32*32 for "
         "Qwen3-VL).",
         "P"},
        {"colormap", "jet (default) or viridis.", "C"},
        {"opacity", "Heat layer opacity 0..1 (default 0.55).", "A"},
        {"smoothing", "Gaussian sigma in grid cells (default 1).", "S"},
        {"gamma", "Power-law contrast (default 0.6).", "G"},
        {"difference", "Also run the model's own scheme: difference.png (where attention moved) and per-layer shift."},
        {"per-token", "A map for every question token and every answer token at the heatmap layer: tokens.png and tokens.json."},
        {"layers-heads",
         "Every captured layer x head: layers_heads.png (small multiples of the maps) and layers_heads.csv "
         "(image mass, entropy and sink shares per head)."},
        {"own-prior",
         "The model's own positional prior of every captured layer and head for the question's last token "
         "(mean q and k rotated to each image token): own_prior.png (prior next to attention at the heatmap "
         "layer) and own_prior.csv (their correlation per layer and head)."},
        {"region",
         "Image region -> text: the merged-grid cells ROW0,COL0,ROW1,COL1 (corners, inclusive) or ROW,COL, of the first "
         "image or, as N:ROW0,COL0,ROW1,COL1, of image N (from 1); which tokens "
         "attend them, per layer: region.png (or --figure-format) and region.csv (mass and share per layer and token; "
         "answer tokens too with --per-token).",
         "CELLS"},
        {"relevancy",
         "Gradient-weighted attention relevancy of the answer's first token (Chefer et al. 2021, through every "
         "layer with autograd): relevancy.png (over the image) and summary.json relevancy."},
        {"masks",
         "Every kind of decoder layer's attention mask over the whole prompt (Gemma: sliding layers and their window, full "
         "layers; where an image's tokens see each other both ways): masks.png (or --figure-format) and masks.json (per kind: "
         "its layers, window, and the keys each query sees)."},
        {"expert-usage",
         "Mixture-of-experts models: where the prompt's image and text tokens are routed, per sparse layer and expert "
         "(share of each kind's tokens, mean router weight): expert_usage.png (or --figure-format), expert_usage.csv "
         "and expert_usage.json."},
        {"schemes",
         "Compare 2 to 6 schemes side by side on this prompt: schemes.png and schemes.csv, e.g. "
         "mrope,circle:alpha=0.3,vrope,circle:age=strategy_4 (vector values with '/': "
         "mm-rope:position-scale=4/8/8).",
         "LIST"},
        {"figure-format", "png (default), svg or pdf: the format of tokens, layers_heads, own_prior, region and schemes figures.", "F"},
        {"device", "cpu (default) or cuda.", "D"},
        {"dtype", "fp32 (default) or bf16.", "T"},
    });
}

AttentionOptions parseAttentionOptions(const QCommandLineParser& parser)
{
    if (parser.isSet("image") != parser.isSet("question"))
        throw UsageError("give --image and --question together (or neither, for the bundled sample)");
    AttentionOptions o;
    o.modelDir = parser.isSet("model") ? parser.value("model") : io::bundledModel();
    o.imagePaths = parser.isSet("image") ? parser.values("image") : QStringList{io::sampleImage()};
    if (o.imagePaths.size() > model::kMaxPromptImages)
        throw UsageError("--image: at most " + std::to_string(model::kMaxPromptImages) + " images in one prompt, got " +
                         std::to_string(o.imagePaths.size()));
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
    o.perToken = parser.isSet("per-token");
    o.layersHeads = parser.isSet("layers-heads");
    o.ownPrior = parser.isSet("own-prior");
    o.relevancy = parser.isSet("relevancy");
    o.expertUsage = parser.isSet("expert-usage");
    o.masks = parser.isSet("masks");
    if (parser.isSet("region")) {
        try {
            o.region = model::CellRegion::parse(parser.value("region"));
        } catch (const std::invalid_argument& e) {
            throw UsageError(std::string("--region: ") + e.what());
        }
    }
    if (parser.isSet("schemes")) {
        if (parser.isSet("scheme") || parser.isSet("age"))
            throw UsageError("--schemes: give each scheme's parameters in its entry, not with --scheme or --age");
        for (const QString& entry : parser.value("schemes").split(','))
            o.schemes << entry.trimmed();
        if (o.schemes.size() < 2 || o.schemes.size() > model::kMaxComparedSchemes)
            throw UsageError("--schemes: expected 2 to " + std::to_string(model::kMaxComparedSchemes) + " schemes, got " +
                             std::to_string(o.schemes.size()));
    }
    const QString format = parser.value("figure-format");
    if (format == "svg")
        o.figureFormat = views::FigureFormat::Svg;
    else if (format == "pdf")
        o.figureFormat = views::FigureFormat::Pdf;
    else if (!format.isEmpty() && format != "png")
        throw UsageError("--figure-format: expected png, svg or pdf");
    o.device = parseDevice(parser);
    o.dtype = parseDtype(parser);
    return o;
}

std::unique_ptr<ModelOnDevice> ModelOnDevice::load(const QString& dir, c10::Device device, c10::ScalarType dtype)
{
    auto m = std::make_unique<ModelOnDevice>();
    static_cast<model::ModelBundle&>(*m) = model::ModelBundle::load(dir, std::make_shared<model::Vlm>(dir, device, dtype));
    m->device = device;
    m->dtype = dtype;
    if (const std::string note = m->vlm->unusedNote(); !note.empty())
        std::fprintf(stderr, "note: %s: %s\n", qPrintable(dir), note.c_str());
    return m;
}

QString AttentionOptions::figureName(const QString& stem) const
{
    switch (figureFormat) {
    case views::FigureFormat::Svg: return stem + ".svg";
    case views::FigureFormat::Pdf: return stem + ".pdf";
    case views::FigureFormat::Png: break;
    }
    return stem + ".png";
}

model::AttentionQuery attentionQuery(const ModelOnDevice& m, const AttentionOptions& o)
{
    model::AttentionQuery q;
    for (const QString& path : o.imagePaths)
        q.images.push_back(model::loadImage(path));
    q.question = o.question;
    q.preprocess = m.preprocess;
    if (o.maxPixels)
        q.preprocess.maxPixels = *o.maxPixels;
    q.layers = parseLayerList(o.captureLayers, m.vlm->config().text.layers);
    if (o.maxNewTokens > 0)
        q.generate = o.maxNewTokens;
    return q;
}

int heatmapLayer(const AttentionOptions& o, const std::vector<int>& captured)
{
    const int layer = o.heatmapLayer.value_or(captured.back());
    if (std::find(captured.begin(), captured.end(), layer) == captured.end())
        throw UsageError("--heatmap-layer: layer " + std::to_string(layer) + " is not captured");
    return layer;
}

model::HeadChoice headChoice(const AttentionOptions& o, int heads)
{
    try {
        return model::HeadChoice::parse(o.head, heads);
    } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--") + e.what());
    }
}

model::ModelScheme modelScheme(const SchemeRequest& request)
{
    return {request.params, request.age ? request.age->pattern() : std::string()};
}

namespace {

// Every image of the prompt: its file, token grid, first token and token count.
QJsonArray imagesJson(const model::AttentionRequest& a, const AttentionOptions& o)
{
    QJsonArray images;
    for (size_t i = 0; i < a.images.size(); ++i) {
        const model::PromptImage& p = a.images[i];
        images.append(QJsonObject{{"file", QFileInfo(o.imagePaths[static_cast<qsizetype>(i)]).absoluteFilePath()},
                                  {"grid", QJsonObject{{"rows", p.rows}, {"cols", p.cols}}},
                                  {"first_token", static_cast<double>(a.imageTokens[static_cast<size_t>(p.first)])},
                                  {"tokens", p.cells()}});
    }
    return images;
}

// What kind of decoder the model has: its architecture, and for MoE models how the prompt's tokens were routed
// (into out.experts), for a hybrid one its linear-attention layers.
void describeArchitecture(const model::ModelConfig& cfg, const model::AttentionRun& run, AttentionOutcome& out)
{
    QJsonObject& s = out.summary;
    s["architecture"] = model::architectureName(cfg.architecture);
    s["model_type"] = QString::fromStdString(cfg.modelType);
    if (cfg.text.moe.any()) {
        s["moe"] = QString::fromStdString(model::moeNote(cfg.text));
        out.experts = model::expertUsage(run, cfg);
        QJsonArray overlap;
        for (size_t k = 0; k < out.experts.layers.size(); ++k)
            overlap.append(
                QJsonObject{{"layer", out.experts.layers[k]}, {"image_text_overlap", reports::imageTextOverlap(out.experts, k)}});
        s["expert_overlap"] = overlap; // 1: image and text tokens use the experts alike; 0: disjoint experts
    }
    if (static_cast<int>(cfg.text.attentionLayers().size()) < cfg.text.layers) { // Qwen3.5: a hybrid decoder
        QJsonArray linear;
        for (int l = 0; l < cfg.text.layers; ++l)
            if (cfg.text.isLinear(l))
                linear.append(l);
        s["deltanet_layers"] = linear;
        s["hybrid_note"] = QString::fromStdString(model::hybridNote(cfg.text));
    }
}

// The masks' codes (attention.safetensors "masks"), and for a model with two kinds of layer (Gemma) which layers are
// which and how each kind rotates: what a scheme's allocation covers on a layer that rotates part of its head.
void describeLayerKinds(const model::ModelConfig& cfg, const model::AttentionRun& run, QJsonObject& s)
{
    s["mask_codes"] = QString::fromStdString(model::keyMaskLegend());
    if (cfg.text.slidingLayers.empty())
        return;
    s["layer_kinds"] = QString::fromStdString(model::layerKindsNote(cfg.text));
    QJsonObject kinds;
    for (int layer = 0; layer < cfg.text.layers; ++layer) {
        const QString kind = cfg.text.isSliding(layer) ? "sliding" : "full";
        if (kinds.contains(kind))
            continue;
        const geometry::PositionTable& table = run.result.layerTables[static_cast<size_t>(layer)];
        const geometry::RotaryConfig& r = table.rotary;
        QJsonObject entry{{"first_layer", layer},
                          {"scheme", QString::fromStdString(table.schemeLabel())},
                          {"allocation", QString::fromStdString(table.allocation.toString())},
                          {"theta", r.theta},
                          {"head_dim", r.headDim},
                          {"rotary_dim", r.rotaryDim()},
                          {"rotated_pairs", r.halfDim()},
                          {"proportional", r.proportional},
                          {"linear_factor", r.linearFactor}};
        if (cfg.text.isSliding(layer))
            entry["window"] = cfg.text.slidingWindow;
        if (const std::string note = model::rotaryCoverageNote(r, table.allocation); !note.empty())
            entry["note"] = QString::fromStdString(note);
        kinds[kind] = entry;
    }
    s["rotary_by_kind"] = kinds;
}

// "0-4, 6": the runs of visible keys in one query's row of codes (seen, or seen through the block).
QJsonArray visibleRuns(const uint8_t* row, int64_t length)
{
    QJsonArray runs;
    for (int64_t k = 0; k < length;) {
        if (row[k] > static_cast<int>(model::KeyMask::Block)) {
            ++k;
            continue;
        }
        int64_t end = k;
        while (end + 1 < length && row[end + 1] <= static_cast<int>(model::KeyMask::Block))
            ++end;
        runs.append(QJsonArray{static_cast<double>(k), static_cast<double>(end)});
        k = end + 1;
    }
    return runs;
}

// --masks: each kind of layer's mask over the whole prompt (keyMasks, the decoder's rule), as a figure and as numbers.
void describeMasks(const model::ModelConfig& cfg, const model::AttentionRun& run, AttentionOutcome& out)
{
    const std::vector<int64_t>& ids = run.prompt.ids;
    const auto length = static_cast<int64_t>(ids.size());
    views::MaskChart& chart = out.maskChart;
    chart.title = QString("what each kind of layer lets a query (row) see of a key (column), %1 tokens").arg(length);
    chart.imageTokens.assign(static_cast<size_t>(length), 0);
    chart.queryRows.assign(static_cast<size_t>(length), 0);
    for (int64_t i : run.prompt.imageTokens)
        chart.imageTokens[static_cast<size_t>(i)] = 1;
    for (int64_t i : run.prompt.queryTokens)
        chart.queryRows[static_cast<size_t>(i)] = 1;
    QJsonArray kinds;
    for (int kind = 0; kind < 2; ++kind) {
        std::vector<int> layers;
        for (int l : cfg.text.attentionLayers())
            if (cfg.text.kindIndex(l) == kind)
                layers.push_back(l);
        if (layers.empty())
            continue;
        const model::MaskKind mask = model::layerMaskKind(cfg.text, layers.front());
        const torch::Tensor codes = model::keyMasks(cfg, layers.front(), ids).contiguous();
        const uint8_t* data = codes.data_ptr<uint8_t>();
        QJsonArray visible, layerList;
        for (int64_t q = 0; q < length; ++q)
            visible.append(visibleRuns(data + q * length, length));
        QString label = QString("layer%1 ").arg(layers.size() > 1 ? "s" : "");
        for (size_t i = 0; i < layers.size(); ++i) {
            layerList.append(layers[i]);
            label += (i ? "," : "") + QString::number(layers[i]);
        }
        label += ": " + QString::fromStdString(mask.words()) + (mask.blocksOpen ? ", image blocks both ways" : "");
        chart.panels.push_back({label, static_cast<int>(length), std::vector<uint8_t>(data, data + codes.numel())});
        const std::vector<int64_t> counts = model::maskCounts(codes);
        kinds.append(QJsonObject{{"kind", mask.sliding ? "sliding" : "full"},
                                 {"window", mask.window},
                                 {"image_blocks_both_ways", mask.blocksOpen},
                                 {"layers", layerList},
                                 {"counts",
                                  QJsonArray{static_cast<double>(counts[0]), static_cast<double>(counts[1]), static_cast<double>(counts[2]),
                                             static_cast<double>(counts[3])}},
                                 {"visible", visible}});
    }
    const auto array = [](const std::vector<int64_t>& v) {
        QJsonArray a;
        for (int64_t i : v)
            a.append(static_cast<double>(i));
        return a;
    };
    out.masksJson = QJsonObject{{"codes", QString::fromStdString(model::keyMaskLegend())},
                                {"length", static_cast<double>(length)},
                                {"image_tokens", array(run.prompt.imageTokens)},
                                {"query_tokens", array(run.prompt.queryTokens)},
                                {"kinds", kinds}};
}

// The heatmap's head choice in words, for its caption.
QString headWords(const model::HeadChoice& head)
{
    return head.kind == model::HeadChoice::Kind::Mean ? QString("mean over heads")
        : head.kind == model::HeadChoice::Kind::Max   ? QString("max over heads")
                                                      : QString("head %1").arg(head.index);
}

// Qwen3-VL: which vision blocks feed which decoder layers (added to the image tokens after the layer).
QJsonObject deepstackJson(const model::ModelConfig& cfg, const model::ForwardResult& r)
{
    QJsonArray blocks, layers;
    std::vector<int> inBlockOrder = cfg.vision.deepstackBlocks; // features come out in block order
    std::sort(inBlockOrder.begin(), inBlockOrder.end());
    for (size_t k = 0; k < r.deepstackEmbeds.size(); ++k) {
        blocks.append(inBlockOrder[k]);
        layers.append(static_cast<int>(k));
    }
    return QJsonObject{{"vision_blocks", blocks}, {"after_decoder_layers", layers}};
}

// A captured layer's mask: its kind, window and whether images attend both ways, and how many of the captured
// question x image cells it hid (the map's zeros there are the mask's cut, not the model's choice).
void describeMask(const model::AttentionRun& run, size_t k, QJsonObject& entry)
{
    const model::MaskKind& kind = run.layerKinds[k];
    entry["layer_kind"] = kind.sliding ? "sliding" : "full";
    if (kind.sliding)
        entry["window"] = kind.window;
    entry["image_blocks_both_ways"] = kind.blocksOpen;
    const std::vector<int64_t> counts = model::maskCounts(run.masks.question[k]);
    const double cells = static_cast<double>(run.masks.question[k].numel());
    const int64_t hidden = counts[static_cast<size_t>(model::KeyMask::Window)] + counts[static_cast<size_t>(model::KeyMask::Causal)];
    entry["hidden_cells"] = static_cast<double>(hidden);
    entry["hidden_share"] = cells > 0 ? static_cast<double>(hidden) / cells : 0.0;
}

// Every captured layer: its scheme, image mass, entropy, centre of mass, per-image masses and sinks, its mask (and, with
// the model's own scheme run too, how far attention moved).
QJsonArray perLayerJson(const model::AttentionRun& run)
{
    const model::ForwardResult& r = run.result;
    const model::AttentionRequest& a = run.prompt;
    QJsonArray perLayer;
    for (size_t k = 0; k < run.layers.size(); ++k) {
        const int layer = run.layers[k];
        const model::AttentionStats st = model::attentionStats(run.attention()[k], a.grids());
        const model::HeadStats sinks = model::meanOverHeads(model::headStats(run.attention()[k], a.grids()));
        const std::vector<double> perImage = model::imageMasses(run.attention()[k], a.grids());
        QJsonArray shares, masses;
        for (double v : model::sharesOf(perImage))
            shares.append(v);
        for (double v : perImage)
            masses.append(v);
        QJsonObject entry{
            {"layer", layer},
            {"scheme", QString::fromStdString(r.layerTables[static_cast<size_t>(layer)].schemeLabel())},
            {"image_mass", st.imageMass},
            {"entropy", st.entropy},
            {"normalized_entropy", st.normalizedEntropy},
            {"centre_of_mass", QJsonObject{{"image", st.centreImage}, {"row", st.centreRow}, {"col", st.centreCol}}},
            {"image_masses", masses}, // per image: the probability on its tokens
            {"image_shares", shares}, // per image: its share of the attention on images
            {"sinks",
             QJsonObject{{"top1_share", sinks.topShare}, {"border_share", sinks.borderShare}, {"first_token_share", sinks.firstShare}}}};
        if (static_cast<size_t>(layer) < r.deepstackEmbeds.size())
            entry["deepstack_after"] = true;
        if (run.ownResult) // total-variation distance between the two schemes' maps over the image
            entry["shift"] = model::attentionShift(run.ownResult->prefill.attentions[k], run.attention()[k]);
        describeMask(run, k, entry);
        perLayer.append(entry);
    }
    return perLayer;
}

// --own-prior: for the row that predicts the answer, how much of each head's map position alone explains.
QJsonObject ownPriorJson(const AttentionOutcome& out, int heads)
{
    QJsonArray priorLayers;
    const size_t perLayer = static_cast<size_t>(heads);
    for (size_t k = 0; k < out.run.layers.size(); ++k) {
        QJsonArray perHead;
        double sum = 0;
        for (size_t h = 0; h < perLayer && k * perLayer + h < out.ownPriors.size(); ++h) {
            perHead.append(out.ownPriors[k * perLayer + h].correlation);
            sum += out.ownPriors[k * perLayer + h].correlation;
        }
        priorLayers.append(QJsonObject{{"layer", out.run.layers[k]}, {"correlation", perHead}, {"mean_correlation", sum / heads}});
    }
    return QJsonObject{
        {"token", static_cast<double>(out.ownPriorToken.index)}, {"token_text", out.ownPriorToken.text}, {"per_layer", priorLayers}};
}

// --region: per captured layer, the text token that attends the cells most.
QJsonObject regionJson(const AttentionOutcome& out, const model::CellRegion& cells)
{
    QJsonArray regionLayers;
    for (size_t k = 0; k < out.run.layers.size(); ++k) {
        const int best = out.region->strongest(k, 1).front();
        const model::MapToken& t = out.region->tokens[static_cast<size_t>(best)];
        regionLayers.append(QJsonObject{{"layer", out.run.layers[k]},
                                        {"strongest_token", static_cast<double>(t.index)},
                                        {"strongest_text", t.text},
                                        {"share", out.region->share[k][static_cast<size_t>(best)]}});
    }
    return QJsonObject{{"cells", cells.toString()}, {"area", out.region->area}, {"per_layer", regionLayers}};
}

// The analyses asked for (core/model/analysis/attention_analyses.h) into `out`, then what the files say of them.
void runAnalyses(ModelOnDevice& m, const AttentionOptions& o, const views::MapPictures& pictures, AttentionOutcome& out)
{
    const model::ModelConfig& cfg = m.vlm->config();
    QJsonObject& s = out.summary;
    model::AnalysesAsked asked;
    asked.ownPrior = o.ownPrior;
    if (o.region) {
        try {
            asked.regionCells = o.region->tokensIn(out.run.prompt);
        } catch (const std::invalid_argument& e) { // the region does not fit the prompt's images
            throw UsageError(std::string("--region: ") + e.what());
        }
    }
    asked.regionHead = out.head;
    asked.relevancy = o.relevancy;
    model::AttentionAnalyses analyses = model::analyseAttention(*m.vlm, out.run, asked);
    out.ownPriorToken = analyses.ownPriorToken;
    out.ownPriors = std::move(analyses.ownPriors);
    out.region = std::move(analyses.region);
    out.relevancy = std::move(analyses.relevancy);
    if (o.ownPrior)
        s["own_prior"] = ownPriorJson(out, cfg.text.heads);
    if (o.region) {
        out.regionCells = *o.region;
        s["region"] = regionJson(out, *o.region);
    }
    if (o.relevancy) {
        out.relevancyMap = views::attentionOverlay(pictures, out.relevancy->map, o.heat);
        s["relevancy"] = QJsonObject{{"token", static_cast<double>(out.relevancy->target)},
                                     {"token_text", m.tokenizer->decode({out.relevancy->target})},
                                     {"text_share", out.relevancy->textShare},
                                     {"correlation_with_attention", out.relevancy->attentionCorrelation}};
    }
}

} // namespace

AttentionOutcome runAttentionOnce(ModelOnDevice& m, const AttentionOptions& o, const model::ModelScheme& scheme)
{
    const model::ModelConfig& cfg = m.vlm->config();
    if (o.expertUsage && !cfg.text.moe.any())
        throw UsageError("--expert-usage: " + cfg.modelType +
                         " is a dense model (no mixture of experts); the MoE members are "
                         "qwen3_5_moe, qwen3_vl_moe and glm4v_moe");
    model::AttentionQuery query = attentionQuery(m, o);
    query.scheme = scheme;
    query.answerMaps = o.perToken;
    query.compareOwn = o.difference;
    query.meanQueryKey = o.ownPrior;
    AttentionOutcome out;
    out.head = headChoice(o, cfg.text.heads);
    const int heatLayer = heatmapLayer(o, query.layers.empty() ? cfg.text.attentionLayers() : query.layers);
    out.run = model::runAttention(m, query);
    const model::AttentionRun& run = out.run;
    const model::ForwardResult& r = run.result;
    out.heat = o.heat;
    out.heatIndex = run.captured(heatLayer);
    out.answer = run.answer;
    const model::AttentionRequest& a = run.prompt;
    const std::vector<float> grid = model::headMap(run.attention()[out.heatIndex], out.head);
    const views::MapPictures pictures = reports::mapPictures(a.images);
    // The image tokens the heatmap layer's mask hid from the question (Gemma's sliding window) are hatched: their zeros
    // are the mask's, not the model's.
    const std::vector<uint8_t> hidden = model::hiddenKeys(run.masks.question[out.heatIndex]);
    out.heatmap = views::hatchHiddenCells(views::attentionOverlay(pictures, grid, o.heat), pictures, hidden);
    if (run.ownResult)
        out.difference =
            views::hatchHiddenCells(views::attentionDifferenceOverlay(
                                        pictures, model::headMap(run.ownResult->prefill.attentions[out.heatIndex], out.head), grid, o.heat),
                                    pictures, hidden);

    const QString trained = QString::fromStdString(geometry::schemeLabel(run.own.params));
    QJsonObject& s = out.summary;
    s = QJsonObject{{"model", QFileInfo(m.dir).absoluteFilePath()},
                    {"image", QFileInfo(o.imagePaths.front()).absoluteFilePath()},
                    {"question", o.question},
                    {"answer", out.answer},
                    {"scheme", QString::fromStdString(geometry::schemeLabel(scheme.params))},
                    {"trained_scheme", trained},
                    {"untrained_scheme", !run.untrained.empty()},
                    {"layout", QString::fromStdString(r.layout.toString())},
                    {"grid", QJsonObject{{"rows", a.image().rows}, {"cols", a.image().cols}}},
                    {"heatmap_layer", heatLayer},
                    {"query_tokens", static_cast<int>(a.queryTokens.size())},
                    {"image_tokens", static_cast<int>(a.imageTokens.size())}};
    s["images"] = imagesJson(a, o);
    describeArchitecture(cfg, run, out);
    if (!a.unknownWords.isEmpty())
        s["unknown_words"] = QJsonArray::fromStringList(a.unknownWords);
    // heatmap.png as the window exports it: the colour bar (least .. most) and what the map shows.
    const QString kind = QString::fromStdString(run.layerKinds[out.heatIndex].words());
    QStringList caption{"Q: " + o.question + "   A: " + out.answer,
                        QString("map of the question tokens, layer %1%2, %3, scheme %4")
                            .arg(heatLayer)
                            .arg(cfg.text.slidingLayers.empty() ? QString() : ", " + kind, headWords(out.head), s["scheme"].toString())};
    if (const QString legend = views::hiddenCellsLegend(hidden, heatLayer, kind, "question token"); !legend.isEmpty())
        caption << legend;
    out.heatmapFigure = views::captionedHeatmap(out.heatmap, o.heat, caption);
    s["allocation"] = QString::fromStdString(r.layerTables.front().allocation.toString());
    const geometry::RotaryConfig& rotary = r.layerTables.front().rotary;
    s["rotary"] = QJsonObject{{"theta", rotary.theta},
                              {"rotary_dim", rotary.rotaryDim()},
                              {"head_dim", rotary.headDim},
                              {"pairing", geometry::rotaryPairingName(rotary.pairing)}};
    if (!r.deepstackEmbeds.empty())
        s["deepstack"] = deepstackJson(cfg, r);
    if (!scheme.age.empty())
        s["age"] = QString::fromStdString(scheme.age);
    if (run.ownResult)
        s["difference_from"] = model::schemeLabel(run.own);
    QJsonArray generatedJson;
    for (int64_t id : run.generated)
        generatedJson.append(static_cast<double>(id));
    s["generated_ids"] = generatedJson;
    s["per_layer"] = perLayerJson(run);
    describeLayerKinds(cfg, run, s);
    if (o.masks)
        describeMasks(cfg, run, out);
    runAnalyses(m, o, pictures, out);
    return out;
}

} // namespace ropescope::cli
