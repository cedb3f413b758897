#pragma once
#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

namespace ropescope::kernels {

// Rotary tables for any number of position components: angle_j = p[c(j)] * inv_freq_j for j < d/2,
// duplicated over the NeoX halves (i, i + d/2). positions [L, C], invFreq [d/2] (float32),
// component [d/2] (int64: which position component drives frequency j). Returns cos, sin as [L, d].
std::pair<at::Tensor, at::Tensor> rotaryTables(const at::Tensor& positions, const at::Tensor& invFreq, const at::Tensor& component);

// x [..., L, d] rotated by cos/sin [L, d] (or [heads, L, d] against x [..., heads, L, d]) with NeoX
// rotate_half pairing. Tables narrower than x rotate only x's first cos.size(-1) dims (partial rotary).
at::Tensor applyRotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

// inv_freq_j = theta^(-2j/d) computed as Hugging Face does (float32), so angles match bit for bit.
at::Tensor inverseFrequencies(double theta, int64_t dim);

} // namespace ropescope::kernels
