#pragma once
// What each decoder layer's attention mask let a query see, for the views that mark what the mask removed (issue 73
// §3): Gemma's sliding layers hide the keys outside their window, and its image blocks attend both ways (Gemma 3 on
// every layer, Gemma 4 on its sliding layers), so a map's empty cells may be the mask's cut, not the model's choice.
// One computation for the CLI's files and the window's maps: visibleKeysOfLayer, the rule the decoder applies.
#include "core/geometry/frequency.h"
#include "core/model/engine/model_config.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ropescope::model {

struct AttentionRun;

// Why a query sees a key or not: the codes of keyMasks (uint8).
enum class KeyMask : uint8_t {
    Seen = 0,   // seen, as causality gives it: the key is at or before the query (within the window)
    Block = 1,  // seen only because query and key share an image block that attends both ways (a later key)
    Window = 2, // hidden by the sliding window: before the query, farther than the window reaches
    Causal = 3, // hidden by causality: after the query, outside any open block of it
};
const char* keyMaskName(KeyMask code); // "seen", "block", "window", "causal"
// The codes in one line, for files: "0 seen (causal), 1 seen through an image block, ...".
std::string keyMaskLegend();

// One decoder layer's mask: sliding (a window of keys up to the query) or full, and whether its image blocks attend
// both ways. Every layer of a family without kinds is full, its blocks closed.
struct MaskKind {
    bool sliding = false;
    int window = 0; // sliding layers' window
    bool blocksOpen = false;
    std::string words() const; // "sliding (window 512)" or "full"
};
MaskKind layerMaskKind(const TextConfig& text, int layer);
std::string layerKindWords(const TextConfig& text, int layer); // layerMaskKind(text, layer).words()
bool layerBlocksOpen(const TextConfig& text, int layer);
// The model's layers by kind in one line for summaries and the window ("layers 0, 1, 3, 4 sliding (window 8), image blocks
// both ways; layers 2, 5 full"); empty for a family whose layers are all one kind.
std::string layerKindsNote(const TextConfig& text);

// What a scheme's allocation covers on a layer that rotates part of its head, in one clause for summaries and the
// window; empty for a layer that rotates its whole head at plain frequencies. Gemma 4's full layers ("proportional":
// 128 of 512 dims, pairs 0-63 at theta^(-2j/512) on dims j and j+256, the other 192 pairs at frequency 0): the
// allocation spreads its axes over those 64 pairs only, the whole head's highest frequencies. Gemma 3's full layers:
// every frequency / 8.
std::string rotaryCoverageNote(const geometry::RotaryConfig& rotary, const geometry::FrequencyAllocation& allocation);

// The codes [rows, cols] of a sequence of `ids` (a prompt, then any answer tokens) at `layer`: positions `rows` as
// queries, `cols` as keys. Image blocks are the runs of the config's image (and video) tokens in `ids`.
at::Tensor keyMasks(const ModelConfig& cfg, int layer, const std::vector<int64_t>& ids, const std::vector<int64_t>& rows,
                    const std::vector<int64_t>& cols);
// The whole sequence [L, L].
at::Tensor keyMasks(const ModelConfig& cfg, int layer, const std::vector<int64_t>& ids);

// A run's captured cells under its layers' masks, in the order of AttentionRun::layers.
struct RunMasks {
    std::vector<at::Tensor> question; // [question tokens, image tokens] codes, the rows of AttentionRun::attention()
    std::vector<at::Tensor> answer;   // [answer tokens, image tokens], the rows of AttentionRun::answerAttention (when kept)
    bool anyHidden() const;           // whether any captured cell is hidden (window or causality)
};
RunMasks runMasks(const ModelConfig& cfg, const AttentionRun& run);

// Per key (column) of `codes` [rows, cols]: 0 seen by every row, 1 hidden from some rows, 2 hidden from every row:
// what a map over the mean of the rows marks.
std::vector<uint8_t> hiddenKeys(const at::Tensor& codes);
// Cells of `codes` with each code, indexed by the code's value (4 counts).
std::vector<int64_t> maskCounts(const at::Tensor& codes);

} // namespace ropescope::model
