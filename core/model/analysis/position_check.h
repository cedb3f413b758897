#pragma once
// `ropescope check-positions`: a training pipeline's position ids (a dump of its batches) against the rule of
// the model family, sample by sample: where the first difference is, on which axis, in which segment, and
// what kind of mistake its shape shows (1-D positions, temporal ids, a padding offset, rope_deltas).
#include "core/geometry/position_table.h"
#include "core/model/engine/model_config.h"
#include "core/positions/family_rule.h"
#include "core/positions/position_check.h"

#include <QJsonObject>
#include <QString>

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ropescope::model {

// A family's rule for positions: M-RoPE with its variants (the rule itself is core/positions', below Qt and
// LibTorch, which the Python package runs too; this is the model-folder side of it). GLM-V and PaddleOCR-VL place images as Qwen does
// ((s, s+row, s+col), the next token at s + max(rows, cols)) and GLM-V's video frames as Qwen3-VL's (each frame
// its own run, t its start), but find vision tokens by mm_token_type_ids (1 image, 2 video), which a dump of
// theirs must hold.
// Gemma 3 and Gemma 4 give every token one sequential position (core/positions' Placement::Sequential): their
// config's image and video ids and vocabulary are held in `config` as the Qwen families' are, and the markers that
// name tokens in a report beside it.
struct PositionRule {
    QString family;            // "qwen2.5-vl", "glm-v", "gemma4", ...
    ModelConfig config;        // token ids, merge size, tokens_per_second; the architecture decides the video form
    bool byTokenTypes = false; // GLM-V, PaddleOCR-VL
    int64_t audioToken = -1, boiToken = -1, eoiToken = -1; // Gemma's (-1: none)
};
// qwen2-vl, qwen2.5-vl, qwen3-vl, qwen3.5, glm-v, paddleocr-vl, ernie-vl, gemma3, gemma4 (xd-rope's four rows are
// Python's only)
std::optional<PositionRule> ruleForFamily(const QString& name);
// The rule of a model folder's config.json (its model_type); throws BadInputFile naming what is missing.
PositionRule ruleForModel(const QString& modelDir);
// The rule as core/positions runs it: the family's, with the config's token ids, vocabulary and merge size.
positions::FamilyRule familyRuleOf(const PositionRule& rule);
QString familyNames();       // those ruleForFamily knows: "qwen2-vl, ..., paddleocr-vl, ernie-vl, gemma3, gemma4"
QString engineFamilyNames(); // those the engine runs: "qwen2-vl, ..., paddleocr-vl"

// One tensor of a dump, as whole numbers (position ids, token ids, grids) or as reals (second_per_grid_ts):
// one copy of each element, not both, and whole numbers in the file's own width (a dump's tensors are its memory).
struct DumpTensor {
    std::vector<int64_t> shape;
    std::vector<int64_t> ints; // when integral and 64-bit (the file's int64, or floats that are all whole)
    // When integral and narrower: the elements in the file's own type, `width` bytes each (little-endian, as
    // the host), signed unless `narrowUnsigned` (uint8, bool).
    std::vector<uint8_t> narrow;
    int width = 8;
    bool narrowUnsigned = false;
    std::vector<double> reals; // when not
    bool integral = true;
    int64_t numel() const;
    size_t held() const { return !integral ? reals.size() : width == 8 ? ints.size() : narrow.size() / static_cast<size_t>(width); }
    int64_t intAt(size_t k) const; // a whole-number element, whatever its width
    double real(size_t k) const { return integral ? static_cast<double>(intAt(k)) : reals[k]; }
};
// One batch: tensors by name. Shapes are checked by checkBatch, not here.
struct DumpBatch {
    QString name; // the file, and the tensor-name prefix when one file holds several batches
    std::map<std::string, DumpTensor> tensors;
};

using positions::FaultKind;
using positions::faultKindName;  // "1-d", "temporal", "offset", "rope-deltas", "other"
using positions::faultKindWords; // one sentence for people

struct SampleCheck {
    QString batch;
    int row = 0;        // in the batch
    int64_t tokens = 0; // attended tokens
    FaultKind kind = FaultKind::None;
    QString detail;          // the shape of the difference, in words
    int64_t firstToken = -1; // index in the row (padding included) of the first differing position
    int axis = -1;           // 0 t, 1 h, 2 w (3: the text row of a [4,B,L] table); gemma: 0, its one position
    int64_t got = 0, expected = 0;
    QString segment;       // "text", "image 0", "video 1 frame 3"
    int64_t differing = 0; // attended tokens with any axis different
    int components = 3;    // the rule's rows: 3 (t, h, w), or the sequential families' 1
    int64_t sequences = 1; // gemma: the packed sequences of the row (positions that restart at 0)
    // The sample's attended positions (components x tokens, row-major), kept for the report's figures.
    std::vector<int64_t> gotPositions, expectedPositions;
    std::vector<QString> segments; // per attended token
    std::string layout;            // the rule's layout of the attended tokens ("text:4,image:2x3,text:6")
};
// The pipeline's positions of a kept sample as a position table (the layout's metadata, its got positions,
// named "pipeline"), for the explorer and `positions` files.
geometry::PositionTable pipelineTable(const SampleCheck& check);

// Checks every row of a batch against `rule` (positions::checkBatch over the dump's tensors). Throws BadInputFile naming the batch and the tensor for
// missing keys, wrong shapes, ids or grids out of range: a dump that cannot be checked.
std::vector<SampleCheck> checkBatch(const DumpBatch& batch, const PositionRule& rule, bool keepPositions);
// The same, each sample handed to `each` as it is checked and kept nowhere (a batch of a million rows streams).
void checkBatchEach(const DumpBatch& batch, const PositionRule& rule, bool keepPositions, const std::function<void(SampleCheck&&)>& each);

QJsonObject sampleCheckJson(const SampleCheck& check);
// The axis of a sample's first difference: "t", "h", "w", "text" ([4, B, L]'s text row), "position" (gemma), or ""
// when none.
QString axisName(const SampleCheck& check);

} // namespace ropescope::model
