#pragma once
// Where a MoE decoder sends image and text tokens: per sparse layer and expert, the share of the prompt's image
// (and video) tokens and of its text tokens whose top-k holds that expert, and the mean router weight they gave
// it. Read from the routers a run captured (DecoderCapture::routers); no tool showed this for a VLM.
#include "core/model/analysis/attention_run.h"
#include "core/model/engine/moe_block.h"

#include <vector>

namespace ropescope::model {

struct ExpertUsage {
    int experts = 0, topK = 0;
    std::vector<int> layers; // the sparse layers, ascending
    int64_t imageTokens = 0, textTokens = 0;
    // [layer][expert]. A share is the fraction of the kind's tokens routed to the expert (each row sums to top-k);
    // a weight is the mean router weight over those tokens (0 where none went).
    std::vector<std::vector<double>> imageShare, textShare, imageWeight, textWeight;

    bool empty() const { return layers.empty(); }
};

// `visual[i]`: whether prompt token i is an image or video token. The routers are one sequence's ([L, k] each).
// Throws ModelError when a router's token count is not visual's.
ExpertUsage expertUsage(const std::vector<RouterTrace>& routers, const std::vector<bool>& visual, int experts);

// A run's prompt: its image and video pads are the visual tokens. Empty for a dense model.
ExpertUsage expertUsage(const AttentionRun& run, const ModelConfig& config);

} // namespace ropescope::model
