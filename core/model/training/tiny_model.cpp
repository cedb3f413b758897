// The tiny Qwen2-VL of the bundled models: its config.json (with the scheme it is trained under), a WordLevel
// tokenizer over the synthetic task's words and Qwen's special tokens, and its preprocessing.
#include "core/model/training/tiny_model.h"

#include "core/model/training/synthetic_task.h"

#include <QDir>
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
        {"vision_config",
         QJsonObject{{"depth", 2},
                     {"embed_dim", 64},
                     {"mlp_ratio", 2},
                     {"num_heads", 2},
                     {"in_chans", 3},
                     {"hidden_size", 128},
                     {"patch_size", 14},
                     {"spatial_merge_size", 2},
                     {"spatial_patch_size", 14},
                     {"temporal_patch_size", 2},
                     {"hidden_act", "quick_gelu"}}},
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
        added.append(QJsonObject{{"id", specialId(s)},
                                 {"content", s},
                                 {"special", true},
                                 {"single_word", false},
                                 {"lstrip", false},
                                 {"rstrip", false},
                                 {"normalized", false}});
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
