// `ropescope attend`: an image and a question through a VLM under any position scheme; the answer, a
// text->image attention heatmap, the captured attention, the positions used and a per-layer summary.
#include "charts/attention_heatmap.h"
#include "charts/chart_export.h"
#include "cli_error.h"
#include "commands.h"
#include "geometry_options.h"
#include "io/atomic_file.h"
#include "io/position_table_io.h"
#include "io/resource_paths.h"
#include "model/attention_stats.h"
#include "model/bundled_model.h"
#include "model/image_processor.h"
#include "model/tensor_io.h"
#include "model/tokenizer.h"
#include "model/vlm.h"
#include "model_options.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

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

int runAttend(const QStringList& args)
{
    QCommandLineParser parser;
    addGeometryOptions(parser);
    parser.addOptions({
        {"model", "Model folder (config.json, *.safetensors, tokenizer.json); default: the bundled mrope model.", "DIR"},
        {"image", "Image file (default: the bundled sample).", "IMG"},
        {"question", "The question about the image (default: the sample's).", "Q"},
        {"output", "Directory for answer.txt, heatmap.png, attention.safetensors, positions.csv, summary.json.", "DIR"},
        {"capture-layers", "Layers whose text->image attention to keep: all (default) or e.g. 0,5,27.", "L"},
        {"heatmap-layer", "Layer of the heatmap (default: the last captured).", "I"},
        {"head", "Heatmap head: mean (default), max, or an index.", "H"},
        {"max-new-tokens", "Answer length limit (default 32; 1 for models without a chat template, such as the bundled ones).", "N"},
        {"max-pixels", "Largest resized image in pixels (default: the model's, capped at 1280*28*28).", "P"},
        {"colormap", "jet (default) or viridis.", "C"},
        {"opacity", "Heat layer opacity 0..1 (default 0.55).", "A"},
        {"smoothing", "Gaussian sigma in grid cells (default 1).", "S"},
        {"gamma", "Power-law contrast (default 0.6).", "G"},
        {"device", "cpu (default) or cuda.", "D"},
    });
    parseOrThrow(parser, args);
    if (!parser.isSet("output"))
        throw UsageError("--output is required");
    if (parser.isSet("image") != parser.isSet("question"))
        throw UsageError("give --image and --question together (or neither, for the bundled sample)");
    if (parser.isSet("layout"))
        throw UsageError("--layout: attend derives the layout from the prompt and the image");
    const QString modelDir = parser.isSet("model") ? parser.value("model") : io::bundledModel();
    const QString imagePath = parser.isSet("image") ? parser.value("image") : io::sampleImage();
    const QString question = parser.isSet("question") ? parser.value("question") : io::sampleQuestion();
    views::HeatmapOptions heat;
    heat.opacity = option(parser, "opacity", heat.opacity, 0, 1);
    heat.smoothing = option(parser, "smoothing", heat.smoothing, 0, 50);
    heat.gamma = option(parser, "gamma", heat.gamma, 0.05, 20);
    const QString colormap = parser.value("colormap");
    if (colormap == "viridis")
        heat.colormap = views::HeatmapOptions::Colormap::Viridis;
    else if (!colormap.isEmpty() && colormap != "jet")
        throw UsageError("--colormap: expected jet or viridis");
    const int maxNewOption = parser.isSet("max-new-tokens") ? parseInteger(parser, "max-new-tokens") : 0;
    if (parser.isSet("max-new-tokens") && (maxNewOption < 1 || maxNewOption > 4096))
        throw UsageError("--max-new-tokens: expected 1 to 4096");
    const torch::Device device = parseDevice(parser);

    return runModelCommand([&] {
        model::Vlm vlm(modelDir, device);
        const model::ModelConfig& cfg = vlm.config();
        const SchemeRequest scheme = parseSchemeOptions(parser, geometry::SchemeKind::Mrope, cfg.text.layers);
        const model::Tokenizer tokenizer = model::Tokenizer::load(QDir(modelDir).filePath("tokenizer.json"));
        model::PreprocessOptions pre = model::loadPreprocessOptions(modelDir);
        if (parser.isSet("max-pixels"))
            pre.maxPixels = static_cast<int64_t>(option(parser, "max-pixels", 0, 56.0 * 56.0, 1e9));
        const QImage image = model::loadImage(imagePath);
        const model::ProcessedImage processed = model::preprocessImage(image, cfg.vision, pre);
        const int imageTokens = processed.tokens();
        if (tokenizer.tokenId("<|image_pad|>") != cfg.imageToken)
            throw model::ModelError("tokenizer.json: <|image_pad|> is not the config's image_token_id " + std::to_string(cfg.imageToken));
        const std::vector<int64_t> ids = tokenizer.encode(model::imagePrompt(tokenizer, question, imageTokens));

        // Capture: every text token after the image (the question) against every image token.
        std::vector<int64_t> rows, cols;
        for (size_t i = 0; i < ids.size(); ++i) {
            if (ids[i] == cfg.imageToken)
                cols.push_back(static_cast<int64_t>(i));
            else if (!cols.empty())
                rows.push_back(static_cast<int64_t>(i));
        }
        model::ForwardRequest req;
        req.inputIds = torch::tensor(ids, torch::kInt64);
        req.pixelValues = processed.pixels;
        req.imageGridThw = processed.grid;
        req.scheme = scheme.params;
        req.age = scheme.age;
        req.capture.layers = parseLayerList(parser.value("capture-layers"), cfg.text.layers);
        req.capture.selection.rows = torch::tensor(rows, torch::kInt64).to(device);
        req.capture.selection.cols = torch::tensor(cols, torch::kInt64).to(device);
        // Chat models answer in sentences; the bundled task models were trained to answer one word.
        req.generate = maxNewOption > 0 ? maxNewOption : tokenizer.tokenId("<|im_start|>") ? 32 : 1;
        const model::ForwardResult r = vlm.run(req);

        const std::vector<int64_t> generated(r.generatedIds.data_ptr<int64_t>(), r.generatedIds.data_ptr<int64_t>() + r.generatedIds.numel());
        const QString answer = model::answerText(tokenizer, generated, cfg.eos);

        const int gridRows = static_cast<int>(processed.grid[0][1].item<int64_t>() / cfg.vision.mergeSize);
        const int gridCols = static_cast<int>(processed.grid[0][2].item<int64_t>() / cfg.vision.mergeSize);
        const int heatLayerIndex = parser.isSet("heatmap-layer") ? parseInteger(parser, "heatmap-layer") : req.capture.layers.back();
        const auto where = std::find(req.capture.layers.begin(), req.capture.layers.end(), heatLayerIndex);
        if (where == req.capture.layers.end())
            throw UsageError("--heatmap-layer: layer " + std::to_string(heatLayerIndex) + " is not captured");
        const torch::Tensor heatProbs = r.prefill.attentions[static_cast<size_t>(where - req.capture.layers.begin())];
        torch::Tensor map;
        const QString head = parser.value("head");
        if (head.isEmpty() || head == "mean")
            map = model::attentionMap(heatProbs, -1);
        else if (head == "max")
            map = std::get<0>(heatProbs.to(torch::kFloat64).mean(1).max(0));
        else {
            bool ok = false;
            const int h = head.toInt(&ok);
            if (!ok || h < 0 || h >= cfg.text.heads)
                throw UsageError("--head: expected mean, max or 0.." + std::to_string(cfg.text.heads - 1));
            map = model::attentionMap(heatProbs, h);
        }
        const auto mapF = map.to(torch::kFloat32).contiguous().to(torch::kCPU);
        const std::vector<float> grid(mapF.data_ptr<float>(), mapF.data_ptr<float>() + mapF.numel());
        const QImage overlay = views::attentionOverlay(image.scaled(processed.resizedWidth, processed.resizedHeight, Qt::IgnoreAspectRatio,
                                                                    Qt::SmoothTransformation),
                                                       grid, gridRows, gridCols, heat);

        // Summary
        const QString trained = geometry::schemeName(model::recordedScheme(modelDir).params.kind);
        QJsonObject summary{{"model", QFileInfo(modelDir).absoluteFilePath()},
                            {"image", QFileInfo(imagePath).absoluteFilePath()},
                            {"question", question},
                            {"answer", answer},
                            {"scheme", geometry::schemeName(scheme.params.kind)},
                            {"trained_scheme", trained},
                            {"untrained_scheme", trained != geometry::schemeName(scheme.params.kind) || scheme.age.has_value()},
                            {"layout", QString::fromStdString(r.layout.toString())},
                            {"grid", QJsonObject{{"rows", gridRows}, {"cols", gridCols}}},
                            {"heatmap_layer", heatLayerIndex},
                            {"query_tokens", static_cast<int>(rows.size())},
                            {"image_tokens", static_cast<int>(cols.size())}};
        if (scheme.age)
            summary["age"] = QString::fromStdString(scheme.age->pattern());
        QJsonArray generatedJson;
        for (int64_t id : generated)
            generatedJson.append(static_cast<double>(id));
        summary["generated_ids"] = generatedJson;
        QJsonArray perLayer;
        for (size_t k = 0; k < req.capture.layers.size(); ++k) {
            const int layer = req.capture.layers[k];
            const model::AttentionStats s = model::attentionStats(r.prefill.attentions[k], gridRows, gridCols);
            perLayer.append(QJsonObject{{"layer", layer},
                                        {"scheme", QString::fromStdString(r.layerTables[static_cast<size_t>(layer)].scheme)},
                                        {"image_mass", s.imageMass},
                                        {"entropy", s.entropy},
                                        {"normalized_entropy", s.normalizedEntropy},
                                        {"centre_of_mass", QJsonObject{{"row", s.centreRow}, {"col", s.centreCol}}}});
        }
        summary["per_layer"] = perLayer;

        model::SafeTensorsWriter tensors;
        tensors.setMetadata("format", "pt");
        tensors.setMetadata("dims", "attention: [captured layers, heads, query tokens, image tokens]");
        model::addTensor(tensors, "attention", torch::stack(r.prefill.attentions, 0).to(torch::kCPU));
        model::addTensor(tensors, "layers", torch::tensor(std::vector<int64_t>(req.capture.layers.begin(), req.capture.layers.end())));
        model::addTensor(tensors, "query_tokens", torch::tensor(rows, torch::kInt64));
        model::addTensor(tensors, "image_tokens", torch::tensor(cols, torch::kInt64));
        model::addTensor(tensors, "input_ids", torch::tensor(ids, torch::kInt64));

        const QDir out(parser.value("output"));
        if (!QDir().mkpath(out.path()))
            throw Failure(out.path().toStdString() + ": cannot create the output directory");
        io::writeFileAtomically(out.filePath("answer.txt"), answer.toUtf8() + "\n");
        io::writeFileAtomically(out.filePath("heatmap.png"), views::encodePng(overlay, summary));
        io::writeFileAtomically(out.filePath("attention.safetensors"), tensors.bytes());
        io::writeFileAtomically(out.filePath("positions.csv"), io::positionTableCsv(r.layerTables.front()));
        io::writeFileAtomically(out.filePath("summary.json"), QJsonDocument(summary).toJson());
        std::printf("%s\n", qPrintable(answer));
        return 0;
    });
}

} // namespace ropescope::cli
