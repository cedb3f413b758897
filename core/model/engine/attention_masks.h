#pragma once
// Which keys each query sees, per kind of decoder layer. Every family but Gemma: causal. Gemma: sliding layers see only
// the `window` positions up to the query; the tokens of an image (or video-frame) block see each other both ways on the
// layers the model says (Gemma 3: all; Gemma 4 "vision": sliding layers only), and still only within the window.
#include "core/model/engine/language_model.h"
#include "kernels/attention.h"

#include <vector>

namespace ropescope::model {

// Image blocks of a prompt: each token's block index (a maximal run of image or video soft tokens), -1 for text.
at::Tensor imageBlockIds(const std::vector<int64_t>& ids, int64_t imageToken, int64_t videoToken);

// The masking of each kind of layer (TextConfig::kindIndex) for a pass of `n` queries after `past` keys: `causal` (what the
// decoder makes for every layer) where a kind adds nothing. `blockIds` [past + n] or undefined (no blocks).
std::vector<kernels::Masking> kindMasking(const TextConfig& text, const kernels::Masking& causal, const at::Tensor& blockIds, int64_t past,
                                          int64_t n, const KvCache* cache, c10::Device device);

// What a layer of `kind` lets query positions see of key positions [queries, keys] (bool), for views that mark what the
// mask removed: the same rule as kindMasking over a whole prompt.
at::Tensor visibleKeysOfLayer(const TextConfig& text, int layer, const at::Tensor& blockIds, int64_t length);

} // namespace ropescope::model
