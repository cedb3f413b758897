#include "core/model/bundled_model.h"

#include "core/io/input_file.h"
#include "core/io/scheme_codec.h"

#include "core/geometry/age.h"
#include "core/geometry/circle_projection.h"
#include "core/geometry/errors.h"
#include "core/geometry/scheme.h"
#include "core/model/synthetic_task.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>

namespace ropescope::model {
namespace {

// Token ids: <pad> 0, <unk> 1, the task's words, then Qwen's special tokens.
const QStringList kSpecials{"<|vision_start|>", "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<|endoftext|>"};

int specialId(const QString& token)
{
    return 2 + static_cast<int>(SyntheticTask::vocabulary().size()) + static_cast<int>(kSpecials.indexOf(token));
}

void save(const QString& path, const QByteArray& bytes)
{
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit())
        throw ModelError(path.toStdString() + ": cannot write");
}

} // namespace

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
    auto pattern = [layers](const std::string& age) { return age.empty() ? std::string() : geometry::parseAgeSchedule(age, layers).pattern(); };
    // A scheme file is the same scheme when its content (hash) and parameter values are.
    const auto& ca = a.params.custom;
    const auto& cb = b.params.custom;
    if (ca || cb) {
        if (!ca || !cb || ca->sha256 != cb->sha256 || ca->values != cb->values)
            return "scheme " + geometry::schemeLabel(a.params) + ", trained " + geometry::schemeLabel(b.params);
    } else if (a.params.kind != b.params.kind)
        return std::string("scheme ") + geometry::schemeName(a.params.kind) + ", trained " + geometry::schemeName(b.params.kind);
    const geometry::SchemeParams &p = a.params, &q = b.params;
    const auto differs = [](const char* name, double inUse, double inTraining) {
        return name + std::string(" ") + geometry::shortNumber(inUse) + ", trained " + geometry::shortNumber(inTraining);
    };
    const auto text = [](const Eigen::Vector3d& v) {
        return geometry::shortNumber(v.x()) + "," + geometry::shortNumber(v.y()) + "," + geometry::shortNumber(v.z());
    };
    if (p.kind == geometry::SchemeKind::VideoRopePlus && p.ntkFactor != q.ntkFactor) // before the allocation it scales
        return differs("NTK factor", p.ntkFactor, q.ntkFactor);
    // The allocation as it applies (an explicit "sectioned" is the default's sectioned[16,24,24]).
    const std::string used = geometry::allocationFor(a.params).toString(), trained = geometry::allocationFor(b.params).toString();
    if (used != trained)
        return "frequency allocation " + used + ", trained " + trained;
    if (pattern(a.age) != pattern(b.age))
        return "AGE " + (a.age.empty() ? std::string("none") : a.age) + ", trained " + (b.age.empty() ? std::string("none") : b.age);
    // The 2025 schemes' placement parameters, where the scheme reads them.
    if (geometry::usesTemporalStride(p.kind) && p.temporalStrideOrDefault() != q.temporalStrideOrDefault())
        return differs("temporal stride", p.temporalStrideOrDefault(), q.temporalStrideOrDefault());
    if (p.kind == geometry::SchemeKind::V2pe && p.visualStride != q.visualStride)
        return differs("visual stride", p.visualStride, q.visualStride);
    if (p.kind == geometry::SchemeKind::MmRope && p.positionScale != q.positionScale)
        return "position scale " + text(p.positionScale) + ", trained " + text(q.positionScale);
    if (a.params.kind != geometry::SchemeKind::Circle && a.age.empty())
        return {}; // no layer uses the Circle-RoPE parameters
    const geometry::CircleParams &x = a.params.circle, &y = b.params.circle;
    if (x.alpha != y.alpha)
        return differs("alpha", x.alpha, y.alpha);
    if (x.radiusMode != y.radiusMode)
        return "radius mode differs";
    if (x.radius != y.radius)
        return differs(x.radiusMode == geometry::RadiusMode::Fixed ? "R" : "k", x.radius, y.radius);
    if (x.stride != y.stride)
        return differs("stride", x.stride, y.stride);
    // Only the text axis's direction places tokens: (2,2,2) is (1,1,1).
    if ((geometry::unitTextAxis(x.textVector) - geometry::unitTextAxis(y.textVector)).norm() > 1e-12)
        return "text vector " + text(x.textVector) + ", trained " + text(y.textVector);
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

ModelScheme recordedScheme(const QString& modelDir)
{
    return schemeFromJson(recordedSection(modelDir));
}

QJsonObject recordedTraining(const QString& modelDir)
{
    return recordedSection(modelDir)["training"].toObject();
}

bool isTaskModel(const QString& modelDir)
{
    return recordedSection(modelDir)["task"].toString().startsWith("shapes-and-colours");
}

QByteArray tinyConfigJson(const ModelScheme& scheme, const QJsonObject& training)
{
    const int vocab = 2 + static_cast<int>(SyntheticTask::vocabulary().size()) + static_cast<int>(kSpecials.size());
    QJsonObject ropescope = schemeToJson(scheme);
    ropescope["task"] = "shapes-and-colours v1 (ropescope train)";
    ropescope["training"] = training;
    const QJsonObject config{
        {"architectures", QJsonArray{"Qwen2VLForConditionalGeneration"}},
        {"model_type", "qwen2_vl"},
        {"hidden_size", 128},
        {"intermediate_size", 384},
        {"num_hidden_layers", kTinyModelLayers},
        {"num_attention_heads", 4},
        {"num_key_value_heads", 2},
        {"vocab_size", vocab},
        {"rms_norm_eps", 1e-6},
        {"rope_theta", 10000.0},
        {"rope_scaling", QJsonObject{{"type", "mrope"}, {"mrope_section", QJsonArray{4, 6, 6}}}},
        {"tie_word_embeddings", true},
        {"torch_dtype", "float16"},
        {"vision_start_token_id", specialId("<|vision_start|>")},
        {"vision_end_token_id", specialId("<|vision_end|>")},
        {"vision_token_id", specialId("<|vision_pad|>")},
        {"image_token_id", specialId("<|image_pad|>")},
        {"video_token_id", specialId("<|video_pad|>")},
        {"eos_token_id", specialId("<|endoftext|>")},
        {"bos_token_id", specialId("<|endoftext|>")},
        {"vision_config", QJsonObject{{"depth", 2}, {"embed_dim", 64}, {"mlp_ratio", 2}, {"num_heads", 2}, {"in_chans", 3},
                                      {"hidden_size", 128}, {"patch_size", 14}, {"spatial_merge_size", 2},
                                      {"spatial_patch_size", 14}, {"temporal_patch_size", 2}, {"hidden_act", "quick_gelu"}}},
        {"ropescope", ropescope},
    };
    return QJsonDocument(config).toJson();
}

void writeTinyModelFiles(const QString& dir, const ModelScheme& scheme, const QJsonObject& training)
{
    if (!QDir().mkpath(dir))
        throw ModelError(dir.toStdString() + ": cannot create the model folder");
    save(QDir(dir).filePath("config.json"), tinyConfigJson(scheme, training));

    QJsonObject vocab{{"<pad>", 0}, {"<unk>", 1}};
    int id = 2;
    for (const QString& w : SyntheticTask::vocabulary())
        vocab[w] = id++;
    QJsonArray added;
    for (const QString& s : kSpecials)
        added.append(QJsonObject{{"id", specialId(s)}, {"content", s}, {"special", true}, {"single_word", false},
                                 {"lstrip", false}, {"rstrip", false}, {"normalized", false}});
    const QJsonObject tokenizer{{"version", "1.0"},
                                {"added_tokens", added},
                                {"normalizer", QJsonObject{{"type", "Lowercase"}}},
                                {"pre_tokenizer", QJsonObject{{"type", "WhitespaceSplit"}}},
                                {"model", QJsonObject{{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}}}};
    save(QDir(dir).filePath("tokenizer.json"), QJsonDocument(tokenizer).toJson());
    const QJsonObject pre{{"image_processor_type", "Qwen2VLImageProcessor"},
                          {"min_pixels", 224 * 224},
                          {"max_pixels", 224 * 224},
                          {"patch_size", 14},
                          {"temporal_patch_size", 2},
                          {"merge_size", 2},
                          {"image_mean", QJsonArray{0.48145466, 0.4578275, 0.40821073}},
                          {"image_std", QJsonArray{0.26862954, 0.26130258, 0.27577711}}};
    save(QDir(dir).filePath("preprocessor_config.json"), QJsonDocument(pre).toJson());
}

} // namespace ropescope::model
