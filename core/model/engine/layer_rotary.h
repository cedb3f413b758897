#pragma once
#include "core/geometry/frequency.h"
#include "core/model/engine/model_config.h"

namespace ropescope::model {

// The rotary a model applies on one decoder layer, as a scheme's RotaryConfig: the layer kind's theta, head size,
// rotating fraction and frequencies (Gemma 4's full layers: proportional; Gemma 3's: divided by the linear factor),
// the model's pairing, and the heads a per-head allocation (MHRoPE) spreads over: the KV heads, or the query heads
// where there are fewer than one KV head per axis (keys are then repeated per query head). `ptd --model` and a
// model run (Vlm::schemeForModel) both take it from here.
inline geometry::RotaryConfig rotaryOfLayer(const TextConfig& text, int layer)
{
    const LayerKind kind = text.layerKind(layer);
    geometry::RotaryConfig r;
    r.theta = kind.theta;
    r.headDim = kind.headDim;
    r.partial = kind.rotaryFraction; // Qwen3.5: a quarter of each head rotates
    r.proportional = kind.proportional;
    r.linearFactor = kind.linearFactor;
    r.pairing = text.pairing; // GLM-V: adjacent pairs
    r.heads = kind.kvHeads >= 3 ? kind.kvHeads : text.heads;
    return r;
}

} // namespace ropescope::model
