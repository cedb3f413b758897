#pragma once
// One question about one image (or several), turned into a VLM run that captures text -> image attention: shared by
// `ropescope attend`, batch "attention" items and the GUI's Attention tab, so all three ask the same thing.
#include "core/model/analysis/attention_stats.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/model_scheme.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"

#include <QImage>
#include <QString>

#include <string>
#include <vector>

namespace ropescope::model {

// One image of a prompt: what its heatmaps are drawn on. Its tokens are imageTokens[first, first + cells()).
struct PromptImage {
    QImage resized;         // the image as the model sees it (the heatmap's background)
    int rows = 0, cols = 0; // its merged grid
    int first = 0;          // its first token's index in AttentionRequest::imageTokens
    int cells() const { return rows * cols; }
    // Its slice of a map over every image token of the prompt.
    std::vector<float> slice(const std::vector<float>& map) const;
};

// Images one prompt may hold: each adds a map and up to the preprocessor's cap of tokens.
constexpr int kMaxPromptImages = 8;

struct AttentionRequest {
    ForwardRequest forward;           // ids, pixels, grids; capture: question tokens x image tokens, every layer
    std::vector<int64_t> ids;         // the prompt
    std::vector<int64_t> queryTokens; // text after the last image (its <|vision_end|> marker excluded)
    std::vector<int64_t> imageTokens; // every image's merged tokens, image after image
    std::vector<PromptImage> images;  // in prompt order; at least one (a video: one per temporal patch)
    bool video = false;               // the visual tokens are one video's (<|video_pad|>), images[k] its k-th temporal patch
    bool chat = false;                // Qwen's chat template: answers are sentences, not one word
    QStringList unknownWords;         // question words a WordLevel model does not know (it reads them as unknown)

    GridShapes grids() const;                                   // the images' grids, in order
    const PromptImage& image() const { return images.front(); } // the first (for one-image prompts, the image)
};

// Preprocesses the images, builds the prompt (chat template or the bundled models' plain form: the images
// one after another, then the question) and selects every layer's question -> image attention.
// Generation: 32 tokens for chat models, 1 for the task models. Throws ModelError when the tokenizer's
// <|image_pad|> is not the config's image token, or for no images / more than kMaxPromptImages.
AttentionRequest prepareAttention(const Vlm& vlm, const Tokenizer& tokenizer, const std::vector<QImage>& images, const QString& question,
                                  const PreprocessOptions& preprocess, c10::Device device = c10::kCPU);

// The same for one video (its frames in order, at 2 frames per second): imageTokens are the video's tokens,
// images[k] its k-th temporal patch (rows, cols, first token; drawn on the patch's first frame), queries the text
// after it. Throws ModelError when the tokenizer's <|video_pad|> is not the config's video token, for no frames or
// more than kMaxVideoFrames, or a question holding vision tokens.
AttentionRequest prepareVideoAttention(const Vlm& vlm, const Tokenizer& tokenizer, const std::vector<QImage>& frames,
                                       const QString& question, const PreprocessOptions& preprocess, c10::Device device = c10::kCPU);

// One line for the user about AttentionRequest::unknownWords (empty when there are none).
QString unknownWordsNote(const QStringList& words);

// Which head a heatmap shows: the mean over heads, the per-cell maximum over heads, or one head.
struct HeadChoice {
    enum class Kind { Mean, Max, Index } kind = Kind::Mean;
    int index = 0;
    static HeadChoice parse(const QString& text, int heads); // "", mean, max or 0..heads-1; throws std::invalid_argument
};

// One layer's captured probabilities [heads, queries, image tokens] as a map over the grid (mean over
// queries), float32 on the CPU, row-major.
std::vector<float> headMap(const at::Tensor& probs, const HeadChoice& head);

} // namespace ropescope::model
