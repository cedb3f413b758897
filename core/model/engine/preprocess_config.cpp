#include "core/model/engine/preprocess_config.h"

#include "core/io/input_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cmath>

namespace ropescope::model {

PreprocessOptions defaultPreprocessOptions(const ModelConfig& config)
{
    PreprocessOptions o;
    const int64_t factor = int64_t(config.vision.patchSize) * config.vision.mergeSize;
    o.maxPixels = 1280 * factor * factor;
    if (hasQwen3Vision(config.architecture)) {
        o.minPixels = 65536; // Qwen3-VL's size.shortest_edge
        o.mean = {0.5f, 0.5f, 0.5f};
        o.stdev = {0.5f, 0.5f, 0.5f};
    }
    if (config.architecture == Architecture::GlmV)
        o.minPixels = 112 * 112;                            // Glm4vImageProcessor's size.shortest_edge; CLIP mean/std as Qwen2-VL
    if (config.architecture == Architecture::PaddleOcrVl) { // the Hub's preprocessor_config.json
        o.minPixels = 147384;
        o.mean = {0.5f, 0.5f, 0.5f};
        o.stdev = {0.5f, 0.5f, 0.5f};
    }
    if (config.architecture == Architecture::Gemma4) { // Gemma4ImageProcessor: rescale only (do_normalize false)
        o.kind = ImageProcessorKind::Gemma4;
        o.maxSoftTokens = config.vision.tokensPerImage;
        o.maxSoftTokensVideo = 70; // Gemma4VideoProcessor's max_soft_tokens
        o.mean = {0.f, 0.f, 0.f};
        o.stdev = {1.f, 1.f, 1.f};
    }
    if (config.architecture == Architecture::Gemma3) { // Gemma3ImageProcessor: IMAGENET_STANDARD_MEAN / _STD
        o.kind = ImageProcessorKind::Gemma3;
        o.mean = {0.5f, 0.5f, 0.5f};
        o.stdev = {0.5f, 0.5f, 0.5f};
    }
    return o;
}

namespace {

// image_mean / image_std over `o`, each 3 finite numbers (std above 0).
void readChannels(const QJsonObject& c, const std::string& where, PreprocessOptions& o)
{
    const auto channels = [&](const char* key, std::array<float, 3>& out, bool positive) {
        if (!c.contains(key))
            return;
        const QJsonArray a = c[key].toArray();
        if (!c[key].isArray() || a.size() != 3)
            throw BadInputFile(where + ": '" + key + "' must be 3 numbers (R, G, B)");
        for (int i = 0; i < 3; ++i) {
            const double x = a[i].toDouble(NAN);
            if (!a[i].isDouble() || !std::isfinite(x) || std::abs(x) > 1e3 || (positive && !(x > 1e-6)))
                throw BadInputFile(where + ": '" + key + "' must be 3 " + (positive ? "numbers above 0" : "finite numbers"));
            out[static_cast<size_t>(i)] = static_cast<float>(x);
        }
    };
    channels("image_mean", o.mean, false);
    channels("image_std", o.stdev, true);
}

// A whole-number key that, when given, must equal the model's value.
void requireSame(const QJsonObject& c, const char* key, int64_t model, const std::string& where, const char* modelKey)
{
    if (!c.contains(key) || c[key].isNull())
        return;
    if (c[key].toDouble(NAN) != static_cast<double>(model))
        throw BadInputFile(where + ": '" + key + "' is " + QString::number(c[key].toDouble(NAN)).toStdString() + " but the model's " +
                           modelKey + " is " + std::to_string(model));
}

// Gemma's processors: max_soft_tokens (Gemma 4, at the top or in image_processor / video_processor objects as
// processor_config.json nests them), the model's own patch and pooling sizes, normalisation when asked for; no
// pan-and-scan (Gemma 3's crops are not run by RopeScope).
PreprocessOptions parseGemma(const QJsonObject& root, const std::string& where, const ModelConfig& config, PreprocessOptions o)
{
    const VisionConfig& v = config.vision;
    const bool gemma4 = o.kind == ImageProcessorKind::Gemma4;
    const QJsonObject image = root["image_processor"].isObject() ? root["image_processor"].toObject() : root;
    if (image["do_pan_and_scan"].toBool(false) || root["do_pan_and_scan"].toBool(false))
        throw BadInputFile(where + ": 'do_pan_and_scan' is true: RopeScope does not run Gemma 3's pan-and-scan crops; set it false");
    auto softTokens = [&](const QJsonObject& c, const char* where2, int fallback) {
        if (!c.contains("max_soft_tokens") || c["max_soft_tokens"].isNull())
            return fallback;
        const double x = c["max_soft_tokens"].toDouble(NAN);
        if (x != 70 && x != 140 && x != 280 && x != 560 && x != 1120)
            throw BadInputFile(where + ": '" + where2 + "max_soft_tokens' must be one of 70, 140, 280, 560, 1120 (Gemma 4's budgets)");
        return static_cast<int>(x);
    };
    if (gemma4) {
        o.maxSoftTokens = softTokens(image, root["image_processor"].isObject() ? "image_processor." : "", o.maxSoftTokens);
        if (root["video_processor"].isObject())
            o.maxSoftTokensVideo = softTokens(root["video_processor"].toObject(), "video_processor.", o.maxSoftTokensVideo);
        requireSame(image, "pooling_kernel_size", v.poolingKernel, where, "vision_config.pooling_kernel_size");
    } else if (image["size"].isObject()) {
        requireSame(image["size"].toObject(), "height", v.imageSize, where, "vision_config.image_size");
        requireSame(image["size"].toObject(), "width", v.imageSize, where, "vision_config.image_size");
    }
    requireSame(image, "patch_size", v.patchSize, where, "vision_config.patch_size");
    if (image["do_normalize"].toBool(!gemma4)) {
        readChannels(image, where, o);
    } else {
        o.mean = {0.f, 0.f, 0.f};
        o.stdev = {1.f, 1.f, 1.f};
    }
    return o;
}

} // namespace

PreprocessOptions parsePreprocessConfig(const QByteArray& json, const QString& name, const ModelConfig& config)
{
    PreprocessOptions o = defaultPreprocessOptions(config);
    const std::string where = name.toStdString();
    const QJsonDocument doc = QJsonDocument::fromJson(json);
    if (!doc.isObject())
        throw BadInputFile(where + ": not a JSON object");
    const QJsonObject c = doc.object();
    if (o.kind != ImageProcessorKind::Qwen)
        return parseGemma(c, where, config, o);
    if (c.contains("size") && !c["size"].isObject())
        throw BadInputFile(where + ": 'size' must be an object");
    const QJsonObject size = c["size"].toObject();
    // min_pixels / max_pixels (Qwen2-VL), or size.shortest_edge / size.longest_edge (newer processors).
    const auto pixels = [&](const char* key, const char* sizeKey, int64_t fallback) {
        const QJsonValue v = c.contains(key) ? c[key] : size[sizeKey];
        if (v.isUndefined() || v.isNull())
            return fallback;
        const double x = v.toDouble(NAN);
        if (!v.isDouble() || !(x >= 1 && x <= 1e12) || x != std::floor(x))
            throw BadInputFile(where + ": '" + key + "' must be a whole number of pixels from 1 to 1e12");
        return static_cast<int64_t>(x);
    };
    const int64_t cap = o.maxPixels;
    o.minPixels = pixels("min_pixels", "shortest_edge", o.minPixels);
    // Every image is enlarged to at least min_pixels, so it is bounded like max_pixels: by RopeScope's cap.
    if (o.minPixels > cap)
        throw BadInputFile(where + ": '" + (c.contains("min_pixels") ? "min_pixels" : "size.shortest_edge") + "' " +
                           std::to_string(o.minPixels) + " is above RopeScope's cap of " + std::to_string(cap) +
                           " pixels per image (1280 merged tokens); every image " + "would be enlarged past it");
    const int64_t maxPixels = pixels("max_pixels", "longest_edge", o.maxPixels);
    if (o.minPixels > maxPixels)
        throw BadInputFile(where + ": min_pixels " + std::to_string(o.minPixels) + " exceeds max_pixels " + std::to_string(maxPixels));
    o.maxPixels = std::max(o.minPixels, std::min(o.maxPixels, maxPixels)); // RopeScope's own cap, see the header
    readChannels(c, where, o);
    return o;
}

PreprocessOptions loadPreprocessOptions(const QString& modelDir, const ModelConfig& config)
{
    const QString path = QDir(modelDir).filePath("preprocessor_config.json");
    if (!QFileInfo::exists(path))
        return defaultPreprocessOptions(config); // a folder without one (the bundled models) uses its architecture's processor settings
    QByteArray bytes;
    try {
        bytes = io::readInputFile(path, 1 << 20, "preprocessor config");
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
    return parsePreprocessConfig(bytes, path, config);
}

} // namespace ropescope::model
