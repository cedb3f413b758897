#include "kernels/rotary.h"

#include <torch/types.h>

namespace ropescope::kernels {

torch::Tensor inverseFrequencies(double theta, int64_t dim)
{
    const auto exponents = torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / static_cast<double>(dim);
    return 1.0 / torch::pow(torch::scalar_tensor(theta, torch::kFloat32), exponents);
}

std::pair<torch::Tensor, torch::Tensor> rotaryTables(const torch::Tensor& positions, const torch::Tensor& invFreq,
                                                     const torch::Tensor& component)
{
    // [L, d/2]: each frequency reads its own component of the position.
    const auto angles = positions.to(torch::kFloat32).index_select(1, component) * invFreq.unsqueeze(0);
    const auto both = torch::cat({angles, angles}, -1);
    return {both.cos(), both.sin()};
}

torch::Tensor applyRotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    const int64_t rotated = cos.size(-1);
    if (rotated < x.size(-1)) // partial rotary: the first `rotated` dims turn, the rest pass through
        return torch::cat({applyRotary(x.narrow(-1, 0, rotated), cos, sin), x.narrow(-1, rotated, x.size(-1) - rotated)}, -1);
    const int64_t half = x.size(-1) / 2;
    const auto x1 = x.narrow(-1, 0, half);
    const auto x2 = x.narrow(-1, half, half);
    // Tables are float32; a bf16 model rotates in its own dtype (as Hugging Face casts cos/sin).
    return x * cos.to(x.scalar_type()) + torch::cat({-x2, x1}, -1) * sin.to(x.scalar_type());
}

} // namespace ropescope::kernels
