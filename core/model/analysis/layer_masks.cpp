#include "core/model/analysis/layer_masks.h"

#include "core/model/analysis/attention_run.h"
#include "core/model/engine/attention_masks.h"

#include <torch/types.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

namespace ropescope::model {
namespace {

// "0-4, 6, 8-9": ascending layers as runs.
std::string layerRuns(const std::vector<int>& layers)
{
    std::string out;
    for (size_t i = 0; i < layers.size();) {
        size_t j = i;
        while (j + 1 < layers.size() && layers[j + 1] == layers[j] + 1)
            ++j;
        out += (out.empty() ? "" : ", ") + std::to_string(layers[i]);
        if (j > i)
            out += "-" + std::to_string(layers[j]);
        i = j + 1;
    }
    return out;
}

// The codes of a whole sequence from the layer's visible keys: seen at or before the query, seen after it (a block),
// hidden before it (the window), hidden after it (causality).
torch::Tensor codesOf(const TextConfig& text, int layer, const torch::Tensor& blocks, int64_t length)
{
    const torch::Tensor visible = visibleKeysOfLayer(text, layer, blocks, length);
    const auto positions = torch::arange(length, torch::kInt64);
    const torch::Tensor later = positions.unsqueeze(0) > positions.unsqueeze(1); // key after query
    torch::Tensor codes = torch::zeros({length, length}, torch::kUInt8);
    codes.masked_fill_(visible.logical_and(later), static_cast<int>(KeyMask::Block));
    codes.masked_fill_(visible.logical_not().logical_and(later.logical_not()), static_cast<int>(KeyMask::Window));
    codes.masked_fill_(visible.logical_not().logical_and(later), static_cast<int>(KeyMask::Causal));
    return codes;
}

torch::Tensor blocksOf(const ModelConfig& cfg, const std::vector<int64_t>& ids)
{
    return imageBlockIds(ids, cfg.imageToken, cfg.videoToken);
}

torch::Tensor indexTensor(const std::vector<int64_t>& v, int64_t length, const char* what)
{
    for (int64_t i : v)
        if (i < 0 || i >= length)
            throw std::invalid_argument(std::string("keyMasks: ") + what + " " + std::to_string(i) + " is outside the sequence of " +
                                        std::to_string(length));
    return torch::tensor(v, torch::kInt64);
}

// One captured layer's codes for rows x cols, computed once per kind of layer (layers of a kind share their mask).
struct KindCodes {
    const ModelConfig& cfg;
    const torch::Tensor blocks;
    int64_t length;
    std::map<int, torch::Tensor> byKind;

    torch::Tensor at(int layer, const torch::Tensor& rows, const torch::Tensor& cols)
    {
        const int kind = cfg.text.kindIndex(layer);
        auto it = byKind.find(kind);
        if (it == byKind.end())
            it = byKind.emplace(kind, codesOf(cfg.text, layer, blocks, length)).first;
        return it->second.index_select(0, rows).index_select(1, cols);
    }
};

} // namespace

const char* keyMaskName(KeyMask code)
{
    switch (code) {
    case KeyMask::Seen: return "seen";
    case KeyMask::Block: return "block";
    case KeyMask::Window: return "window";
    case KeyMask::Causal: return "causal";
    }
    return "seen";
}

std::string keyMaskLegend()
{
    return "0 seen (causal), 1 seen only through an image block that attends both ways (a later key), 2 hidden by the sliding "
           "window (an earlier key out of reach), 3 hidden by causality (a later key)";
}

bool layerBlocksOpen(const TextConfig& text, int layer)
{
    return text.imageBlocks == ImageBlocks::AllLayers || (text.imageBlocks == ImageBlocks::SlidingLayers && text.isSliding(layer));
}

std::string MaskKind::words() const
{
    return sliding ? "sliding (window " + std::to_string(window) + ")" : std::string("full");
}

MaskKind layerMaskKind(const TextConfig& text, int layer)
{
    return {text.isSliding(layer), text.isSliding(layer) ? text.slidingWindow : 0, layerBlocksOpen(text, layer)};
}

std::string layerKindWords(const TextConfig& text, int layer)
{
    return layerMaskKind(text, layer).words();
}

std::string layerKindsNote(const TextConfig& text)
{
    if (text.slidingLayers.empty())
        return {};
    std::vector<int> sliding, full;
    for (int l = 0; l < text.layers; ++l)
        (text.isSliding(l) ? sliding : full).push_back(l);
    const auto kind = [&](const std::vector<int>& layers, const std::string& words) {
        if (layers.empty())
            return std::string();
        std::string s = "layer" + std::string(layers.size() > 1 ? "s " : " ") + layerRuns(layers) + " " + words;
        if (layerBlocksOpen(text, layers.front()))
            s += ", an image's tokens see each other both ways";
        return s;
    };
    std::string note = kind(sliding, "sliding (window " + std::to_string(text.slidingWindow) + ")");
    const std::string f = kind(full, "full");
    return note.empty() ? f : f.empty() ? note : note + "; " + f;
}

std::string rotaryCoverageNote(const geometry::RotaryConfig& rotary, const geometry::FrequencyAllocation& allocation)
{
    const int pairs = rotary.halfDim();
    const std::string allocated =
        "a scheme's allocation (here " + allocation.toString() + ") spreads its axes over those " + std::to_string(pairs) + " pairs only";
    std::string note;
    if (rotary.proportional) {
        const std::vector<double> inv = geometry::inverseFrequencies(rotary);
        const int half = rotary.headDim / 2;
        char slowest[32];
        std::snprintf(slowest, sizeof slowest, "%.0f", inv.empty() ? 0.0 : 6.283185307179586 / inv.back());
        note = std::to_string(rotary.rotaryDim()) + " of " + std::to_string(rotary.headDim) + " dims rotate (proportional): pairs 0-" +
            std::to_string(pairs - 1) + " at theta^(-2j/" + std::to_string(rotary.headDim) + ") on dims j and j+" + std::to_string(half) +
            ", the other " + std::to_string(half - pairs) + " pairs at frequency 0 (no position); " + allocated +
            ", the whole head's highest frequencies (the slowest turns once in " + slowest + " positions)";
    } else if (rotary.unrotatedDims() > 0) {
        note = std::to_string(rotary.rotaryDim()) + " of " + std::to_string(rotary.headDim) + " dims rotate (" +
            geometry::rotaryPairingName(rotary.pairing) + " pairs); " + allocated + ", the other dims carry no position";
    }
    if (rotary.linearFactor != 1.0) {
        char factor[32];
        std::snprintf(factor, sizeof factor, "%g", rotary.linearFactor);
        note += std::string(note.empty() ? "" : "; ") + "every frequency / " + factor + " (linear scaling: positions turn " + factor +
            " times slower)";
    }
    return note;
}

torch::Tensor keyMasks(const ModelConfig& cfg, int layer, const std::vector<int64_t>& ids, const std::vector<int64_t>& rows,
                       const std::vector<int64_t>& cols)
{
    const auto length = static_cast<int64_t>(ids.size());
    KindCodes codes{cfg, blocksOf(cfg, ids), length, {}};
    return codes.at(layer, indexTensor(rows, length, "row"), indexTensor(cols, length, "column"));
}

torch::Tensor keyMasks(const ModelConfig& cfg, int layer, const std::vector<int64_t>& ids)
{
    return codesOf(cfg.text, layer, blocksOf(cfg, ids), static_cast<int64_t>(ids.size()));
}

bool RunMasks::anyHidden() const
{
    for (const auto* list : {&question, &answer})
        for (const torch::Tensor& t : *list)
            if (t.numel() > 0 && t.ge(static_cast<int>(KeyMask::Window)).any().item<bool>())
                return true;
    return false;
}

RunMasks runMasks(const ModelConfig& cfg, const AttentionRun& run)
{
    const AttentionRequest& a = run.prompt;
    // Answer rows: row k is the query that produced answer token k, at position L - 1 + k (the prompt's last token, then
    // the answer's tokens), so the sequence runs on through the generated tokens.
    const int64_t answers = run.answerAttention.empty() ? 0 : run.answerAttention.front().size(1);
    std::vector<int64_t> ids = a.ids;
    for (int64_t k = 0; k + 1 < answers && static_cast<size_t>(k) < run.generated.size(); ++k)
        ids.push_back(run.generated[static_cast<size_t>(k)]);
    const auto length = static_cast<int64_t>(ids.size());
    KindCodes codes{cfg, blocksOf(cfg, ids), length, {}};
    const torch::Tensor rows = indexTensor(a.queryTokens, length, "row"), cols = indexTensor(a.imageTokens, length, "column");
    std::vector<int64_t> answerRows;
    for (int64_t k = 0; k < answers; ++k)
        answerRows.push_back(static_cast<int64_t>(a.ids.size()) - 1 + k);
    const torch::Tensor answerIndex = indexTensor(answerRows, length, "row");
    RunMasks out;
    for (int layer : run.layers) {
        out.question.push_back(codes.at(layer, rows, cols));
        if (answers > 0)
            out.answer.push_back(codes.at(layer, answerIndex, cols));
    }
    return out;
}

std::vector<uint8_t> hiddenKeys(const torch::Tensor& codes)
{
    std::vector<uint8_t> out(static_cast<size_t>(codes.size(1)), 0);
    if (codes.size(0) == 0)
        return out;
    const torch::Tensor hidden = codes.ge(static_cast<int>(KeyMask::Window));
    const torch::Tensor marks = (hidden.any(0).to(torch::kUInt8) + hidden.all(0).to(torch::kUInt8)).contiguous(); // 0, 1 or 2
    std::copy(marks.data_ptr<uint8_t>(), marks.data_ptr<uint8_t>() + marks.numel(), out.begin());
    return out;
}

std::vector<int64_t> maskCounts(const torch::Tensor& codes)
{
    std::vector<int64_t> counts(4, 0);
    for (int v = 0; v < 4; ++v)
        counts[static_cast<size_t>(v)] = codes.eq(v).sum().item<int64_t>();
    return counts;
}

} // namespace ropescope::model
