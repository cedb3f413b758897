#include "core/model/analysis/attention_request.h"

#include "core/model/analysis/attention_stats.h"
#include "core/model/engine/host_allocator.h"
#include "core/model/engine/safetensors.h"

#include <torch/types.h>
#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace ropescope::model {
namespace {

// A captured decoder layer holds its whole heads x L x L score matrix (scores, probabilities and the
// float mask, ~3 copies), so the prompt length that fits follows from memory: refuse prompts whose one
// layer would need more than half of this machine's memory, instead of failing deep inside a run.
void refuseOversizedPrompt(int64_t tokens, int heads)
{
    const double perLayer = 4.0 * static_cast<double>(tokens) * static_cast<double>(tokens) * (3.0 * heads + 1.0);
    refuseOverHalfTheMemory(perLayer, "the prompt is " + std::to_string(tokens) + " tokens; capturing its attention per layer",
                            "shorten the question or use a smaller image");
}

// The special tokens a family's prompts are written with: Qwen's, GLM-V's (whose video frames are image spans of
// <|image|> pads, typed as video by mm_token_type_ids), PaddleOCR-VL's, or Gemma's as its tokenizer spells the config's
// ids (so a tokenizer and a config always agree).
struct PromptTokens {
    std::string imagePad, videoPad, start, end;
    std::string chat; // present in the tokenizer when the model has a chat template
    ChatTemplate chatTemplate;
    VisionMarkers markers; // Gemma: the tokens its prompts write images and video frames with
};

// The text of the config's `key` (id) in the tokenizer; an id the tokenizer lacks is named with the key.
std::string tokenOfConfig(const Tokenizer& tokenizer, int id, const std::string& key)
{
    if (const auto text = tokenizer.tokenText(id))
        return *text;
    throw BadInputFile("tokenizer.json: no token has the config's " + key + " " + std::to_string(id) +
                       " (the tokenizer and config.json come from different models)");
}

PromptTokens gemmaPromptTokens(const ModelConfig& cfg, const Tokenizer& tokenizer)
{
    const bool g4 = cfg.architecture == Architecture::Gemma4;
    PromptTokens t;
    t.imagePad = tokenOfConfig(tokenizer, cfg.imageToken, g4 ? "image_token_id" : "image_token_index");
    t.start = tokenOfConfig(tokenizer, cfg.visionStart, g4 ? "boi_token_id" : "boi_token_index");
    t.end = tokenOfConfig(tokenizer, cfg.visionEnd, g4 ? "eoi_token_id" : "eoi_token_index");
    if (g4 && tokenizer.tokenText(cfg.videoToken)) // read where a video asks for it: an image prompt does not need it
        t.videoPad = *tokenizer.tokenText(cfg.videoToken);
    t.chat = g4 ? "<|turn>" : "<start_of_turn>";
    t.chatTemplate = g4 ? ChatTemplate::Gemma4 : ChatTemplate::Gemma3;
    t.markers = {QString::fromStdString(t.imagePad), QString::fromStdString(t.start), QString::fromStdString(t.end),
                 QString::fromStdString(t.videoPad)};
    return t;
}

PromptTokens promptTokens(const ModelConfig& cfg, const Tokenizer& tokenizer)
{
    if (isGemma(cfg.architecture))
        return gemmaPromptTokens(cfg, tokenizer);
    if (cfg.architecture == Architecture::GlmV)
        return {"<|image|>",
                "<|image|>",
                "<|begin_of_image|>",
                "<|end_of_image|>",
                "<|assistant|>",
                cfg.glm46 ? ChatTemplate::Glm46V : ChatTemplate::Glm41V,
                {}};
    if (cfg.architecture == Architecture::PaddleOcrVl) // no video path: its "video pad" is never written
        return {"<|IMAGE_PLACEHOLDER|>",
                "<|IMAGE_PLACEHOLDER|>",
                "<|IMAGE_START|>",
                "<|IMAGE_END|>",
                "<|begin_of_sentence|>",
                ChatTemplate::PaddleOcrVl,
                {}};
    return {"<|image_pad|>",
            "<|video_pad|>",
            "<|vision_start|>",
            "<|vision_end|>",
            "<|im_start|>",
            hasQwen3Vision(cfg.architecture) ? ChatTemplate::Qwen3VL : ChatTemplate::Qwen2VL,
            {}};
}

// Gemma 4 has an audio tower RopeScope does not run: a question holding its audio token is refused in one line.
void refuseAudio(const ModelConfig& cfg, const Tokenizer& tokenizer, const std::vector<int64_t>& ids)
{
    if (cfg.audioToken < 0 || std::find(ids.begin(), ids.end(), static_cast<int64_t>(cfg.audioToken)) == ids.end())
        return;
    throw BadRequest("the question holds the audio token " + tokenizer.tokenText(cfg.audioToken).value_or("of audio_token_id") +
                     ": RopeScope runs no audio tower (Gemma 4's audio inputs are refused); write the question without it");
}

// What every prompt gets once its ids and visual tokens are known: the queries (the text after the last visual
// token, its <|vision_end|> excluded), the chat flag, the unknown words, and the run that captures every
// attention layer's queries x visual tokens.
void finishRequest(AttentionRequest& a, const ModelConfig& cfg, const Tokenizer& tokenizer, const QString& question, torch::Device device)
{
    for (auto i = a.imageTokens.empty() ? 0 : a.imageTokens.back() + 1; i < static_cast<int64_t>(a.ids.size()); ++i)
        if (a.ids[static_cast<size_t>(i)] != cfg.visionEnd && a.ids[static_cast<size_t>(i)] != cfg.videoEnd) // GLM-V: <|end_of_video|>
            a.queryTokens.push_back(i);
    a.chat = tokenizer.tokenId(promptTokens(cfg, tokenizer).chat).has_value();
    refuseAudio(cfg, tokenizer, a.ids);
    if (needsTokenTypes(cfg.architecture)) { // GLM-V and PaddleOCR-VL place their pads by these
        std::vector<int64_t> types(a.ids.size(), 0);
        for (int64_t i : a.imageTokens)
            types[static_cast<size_t>(i)] = a.video ? 2 : 1;
        a.forward.tokenTypes = torch::tensor(types, torch::kInt64);
    }
    a.unknownWords = tokenizer.unknownWords(question);
    ForwardRequest& f = a.forward;
    f.inputIds = torch::tensor(a.ids, torch::kInt64);
    f.capture.layers = cfg.text.attentionLayers();
    f.capture.selection.rows = torch::tensor(a.queryTokens, torch::kInt64).to(device);
    f.capture.selection.cols = torch::tensor(a.imageTokens, torch::kInt64).to(device);
    f.generate = a.chat ? 32 : 1;
}

} // namespace

std::vector<float> PromptImage::slice(const std::vector<float>& map) const
{
    if (first < 0 || static_cast<size_t>(first) + static_cast<size_t>(cells()) > map.size())
        throw std::invalid_argument("PromptImage::slice: the map does not cover the image's tokens");
    return std::vector<float>(map.begin() + first, map.begin() + first + cells());
}

GridShapes AttentionRequest::grids() const
{
    GridShapes g;
    for (const PromptImage& image : images)
        g.push_back({image.rows, image.cols});
    return g;
}

AttentionRequest prepareAttention(const Vlm& vlm, const Tokenizer& tokenizer, const std::vector<QImage>& images, const QString& question,
                                  const PreprocessOptions& preprocess, torch::Device device)
{
    const ModelConfig& cfg = vlm.config();
    const PromptTokens names = promptTokens(cfg, tokenizer);
    if (tokenizer.tokenId(names.imagePad) != cfg.imageToken)
        throw BadInputFile("tokenizer.json: " + names.imagePad + " is not the config's image_token_id " + std::to_string(cfg.imageToken));
    if (images.empty() || images.size() > static_cast<size_t>(kMaxPromptImages))
        throw BadRequest("images: a prompt takes 1 to " + std::to_string(kMaxPromptImages) + " images, got " +
                         std::to_string(images.size()));
    // The images' token count follows from their sizes alone: check it before any pixel is resampled, so a
    // large --max-pixels or several large images are refused before they take memory.
    // The processor's own size (Qwen's smart_resize, Gemma 4's soft-token budget, Gemma 3's square), in merged tokens.
    int64_t imageTokens = 0;
    const int64_t factor = static_cast<int64_t>(cfg.vision.patchSize) * cfg.vision.mergeSize;
    for (const QImage& image : images) {
        const auto [h, w] = processedSize(image.height(), image.width(), cfg.vision, preprocess);
        imageTokens += (h / factor) * (w / factor);
    }
    refuseOversizedPrompt(imageTokens, cfg.text.heads);
    AttentionRequest a;
    std::vector<int> tokensPerImage;
    std::vector<torch::Tensor> pixels, grids;
    for (const QImage& image : images) {
        const ProcessedImage processed = preprocessImage(image, cfg.vision, preprocess);
        PromptImage p; // Gemma 4: 3x3 pooled patches a token; Gemma 3: its average pooling's grid
        p.rows = static_cast<int>(processed.grid[0][1].item<int64_t>() / processed.mergeSize);
        p.cols = static_cast<int>(processed.grid[0][2].item<int64_t>() / processed.mergeSize);
        p.first = a.images.empty() ? 0 : a.images.back().first + a.images.back().cells();
        p.resized = image.scaled(processed.resizedWidth, processed.resizedHeight, Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
        a.images.push_back(p);
        tokensPerImage.push_back(processed.tokens());
        pixels.push_back(processed.pixels);
        grids.push_back(processed.grid);
    }
    a.ids = tokenizer.encode(imagePrompt(tokenizer, question, tokensPerImage, names.chatTemplate, names.markers));
    refuseOversizedPrompt(static_cast<int64_t>(a.ids.size()), cfg.text.heads);
    for (size_t i = 0; i < a.ids.size(); ++i)
        if (a.ids[i] == cfg.imageToken)
            a.imageTokens.push_back(static_cast<int64_t>(i));
    if (a.imageTokens.size() != static_cast<size_t>(a.images.back().first + a.images.back().cells()))
        throw BadRequest("the question holds image tokens of its own: write it without " + names.imagePad);
    // The prompt holds one <|vision_start|> ... <|vision_end|> per image and no video: any other vision
    // token came from the question, and would be read as a video or an image without its grid.
    const auto count = [&](int id) { return std::count(a.ids.begin(), a.ids.end(), static_cast<int64_t>(id)); };
    // GLM-V's and PaddleOCR-VL's video pads are their image pads: name the token their config calls the video token.
    const std::string videoName = cfg.architecture == Architecture::GlmV ? "<|video|>"
        : needsTokenTypes(cfg.architecture) || names.videoPad.empty()    ? "the video token"
                                                                         : names.videoPad;
    const std::pair<int, std::string> special[] = {{cfg.videoToken, videoName}, {cfg.visionStart, names.start}, {cfg.visionEnd, names.end}};
    for (const auto& [id, name] : special)
        if (count(id) != (id == cfg.videoToken ? 0 : static_cast<std::ptrdiff_t>(images.size())))
            throw BadRequest("the question holds the special token " + name + ": write it without");
    a.forward.pixelValues = torch::cat(pixels);
    a.forward.imageGridThw = torch::cat(grids);
    finishRequest(a, cfg, tokenizer, question, device);
    return a;
}

AttentionRequest prepareVideoAttention(const Vlm& vlm, const Tokenizer& tokenizer, const std::vector<QImage>& frames,
                                       const QString& question, const PreprocessOptions& preprocess, torch::Device device)
{
    const ModelConfig& cfg = vlm.config();
    if (cfg.architecture == Architecture::PaddleOcrVl || cfg.architecture == Architecture::Gemma3)
        throw BadRequest(std::string("video: ") + (cfg.architecture == Architecture::Gemma3 ? "Gemma 3" : "PaddleOCR-VL") +
                         " has no video path (its processor and model take images only)");
    const PromptTokens names = promptTokens(cfg, tokenizer);
    const bool glm = cfg.architecture == Architecture::GlmV;
    const int padId = glm ? cfg.imageToken : cfg.videoToken; // GLM-V's frames are image pads
    if (names.videoPad.empty())                              // Gemma 4: the tokenizer lacks the config's video token
        tokenOfConfig(tokenizer, padId, "video_token_id");
    if (tokenizer.tokenId(names.videoPad) != padId)
        throw BadInputFile("tokenizer.json: " + names.videoPad + " is not the config's " + (glm ? "image_token_id " : "video_token_id ") +
                           std::to_string(padId));
    if (frames.empty() || frames.size() > static_cast<size_t>(kMaxVideoFrames))
        throw BadRequest("video: a prompt takes 1 to " + std::to_string(kMaxVideoFrames) + " frames, got " + std::to_string(frames.size()));
    const int64_t factor = static_cast<int64_t>(cfg.vision.patchSize) * cfg.vision.mergeSize;
    const auto [h, w] = processedSize(frames.front().height(), frames.front().width(), cfg.vision, preprocess, /*video=*/true);
    const int64_t patches = (static_cast<int64_t>(frames.size()) + cfg.vision.temporalPatch - 1) / cfg.vision.temporalPatch;
    refuseOversizedPrompt(patches * (h / factor) * (w / factor), cfg.text.heads);
    const ProcessedImage processed = preprocessVideo(frames, cfg.vision, preprocess);
    AttentionRequest a;
    a.video = true;
    const int rows = static_cast<int>(h / factor), cols = static_cast<int>(w / factor);
    for (int64_t k = 0; k < patches; ++k) {
        PromptImage p;
        p.rows = rows;
        p.cols = cols;
        p.first = static_cast<int>(k) * rows * cols;
        p.resized = frames[static_cast<size_t>(k * cfg.vision.temporalPatch)].scaled(static_cast<int>(w), static_cast<int>(h),
                                                                                     Qt::IgnoreAspectRatio, Qt::SmoothTransformation);
        a.images.push_back(p);
    }
    const ChatTemplate chat = names.chatTemplate;
    a.ids = tokenizer.encode(
        videoPrompt(tokenizer, question, static_cast<int>(patches), rows * cols, cfg.vision.temporalPatch, chat, 2.0, names.markers));
    refuseOversizedPrompt(static_cast<int64_t>(a.ids.size()), cfg.text.heads);
    for (size_t i = 0; i < a.ids.size(); ++i)
        if (a.ids[i] == padId)
            a.imageTokens.push_back(static_cast<int64_t>(i));
    if (a.imageTokens.size() != static_cast<size_t>(patches * rows * cols))
        throw BadRequest("the question holds video tokens of its own: write it without " + names.videoPad);
    const auto count = [&](int id) { return std::count(a.ids.begin(), a.ids.end(), static_cast<int64_t>(id)); };
    // Qwen3-VL and GLM-V wrap every temporal patch; Qwen2/2.5-VL the whole video once.
    const std::ptrdiff_t blocks = chat == ChatTemplate::Qwen2VL ? 1 : patches;
    std::vector<std::pair<int, std::string>> special{{cfg.visionStart, names.start}, {cfg.visionEnd, names.end}};
    if (!glm)
        special.push_back({cfg.imageToken, names.imagePad});
    for (const auto& [id, name] : special)
        if (count(id) != (id == cfg.imageToken ? 0 : blocks))
            throw BadRequest("the question holds the special token " + name + ": write it without");
    if (glm && (count(cfg.videoStart) != 1 || count(cfg.videoEnd) != 1 || count(cfg.videoToken) != 0))
        throw BadRequest("the question holds the special token <|begin_of_video|>, <|end_of_video|> or <|video|>: write it without");
    a.forward.videoPixelValues = processed.pixels;
    a.forward.videoGridThw = processed.grid;
    finishRequest(a, cfg, tokenizer, question, device);
    return a;
}

QString unknownWordsNote(const QStringList& words)
{
    if (words.isEmpty())
        return {};
    return QString("the model does not know the word%1 '%2': it reads %3 as unknown, so the answer ignores %3 (its words are in its "
                   "tokenizer.json)")
        .arg(words.size() > 1 ? "s" : "", words.join("', '"), words.size() > 1 ? "them" : "it");
}

HeadChoice HeadChoice::parse(const QString& text, int heads)
{
    if (text.isEmpty() || text == "mean")
        return {};
    if (text == "max")
        return {Kind::Max, 0};
    bool ok = false;
    const int h = text.toInt(&ok);
    if (!ok || h < 0 || h >= heads)
        throw std::invalid_argument("head: expected mean, max or 0.." + std::to_string(heads - 1) + ", got '" + text.toStdString() + "'");
    return {Kind::Index, h};
}

std::vector<float> headMap(const torch::Tensor& probs, const HeadChoice& head)
{
    torch::Tensor map;
    switch (head.kind) {
    case HeadChoice::Kind::Mean: map = attentionMap(probs, -1); break;
    case HeadChoice::Kind::Max: map = std::get<0>(probs.to(torch::kFloat64).mean(1).max(0)); break;
    case HeadChoice::Kind::Index: map = attentionMap(probs, head.index); break;
    }
    const torch::Tensor m = map.to(torch::kCPU, torch::kFloat32).contiguous();
    return std::vector<float>(m.data_ptr<float>(), m.data_ptr<float>() + m.numel());
}

} // namespace ropescope::model
