#pragma once
// One question about one image, turned into a VLM run that captures text -> image attention: shared by
// `ropescope attend`, batch "attention" items and the GUI's Attention tab, so all three ask the same thing.
#include "bundled_model.h"
#include "image_processor.h"
#include "tokenizer.h"
#include "vlm.h"

#include <QImage>
#include <QString>

#include <string>
#include <vector>

namespace ropescope::model {

struct AttendRequest {
    ForwardRequest forward;            // ids, pixels, grid; capture: question tokens x image tokens, every layer
    std::vector<int64_t> ids;          // the prompt
    std::vector<int64_t> queryTokens;  // text after the image (its <|vision_end|> marker excluded)
    std::vector<int64_t> imageTokens;  // the image's merged tokens
    int gridRows = 0, gridCols = 0;    // the merged grid the heatmap is drawn on
    QImage resized;                    // the image as the model sees it (the heatmap's background)
    bool chat = false;                 // Qwen's chat template: answers are sentences, not one word
    QStringList unknownWords;          // question words a WordLevel model does not know (it reads them as unknown)
};

// Preprocesses `image`, builds the prompt (chat template or the bundled models' plain form) and selects
// every layer's question -> image attention. Generation: 32 tokens for chat models, 1 for the task models.
// Throws ModelError when the tokenizer's <|image_pad|> is not the config's image token.
AttendRequest prepareAttend(const Vlm& vlm, const Tokenizer& tokenizer, const QImage& image, const QString& question,
                            const PreprocessOptions& preprocess, torch::Device device = torch::kCPU);

// One line for the user about AttendRequest::unknownWords (empty when there are none).
QString unknownWordsNote(const QStringList& words);

// Which head a heatmap shows: the mean over heads, the per-cell maximum over heads, or one head.
struct HeadChoice {
    enum class Kind { Mean, Max, Index } kind = Kind::Mean;
    int index = 0;
    static HeadChoice parse(const QString& text, int heads); // "", mean, max or 0..heads-1; throws std::invalid_argument
};

// One layer's captured probabilities [heads, queries, image tokens] as a map over the grid (mean over
// queries), float32 on the CPU, row-major.
std::vector<float> headMap(const torch::Tensor& probs, const HeadChoice& head);

} // namespace ropescope::model
