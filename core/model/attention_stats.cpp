#include "attention_stats.h"

#include <cmath>
#include <stdexcept>

namespace ropescope::model {

torch::Tensor attentionMap(const torch::Tensor& probs, int head)
{
    const auto p = probs.to(torch::kFloat64);
    return (head < 0 ? p.mean(0) : p[head]).mean(0);
}

AttentionStats attentionStats(const torch::Tensor& probs, int rows, int cols)
{
    AttentionStats s;
    const auto p = probs.to(torch::kFloat64);           // [H, Q, N]
    const auto mass = p.sum(-1);                         // [H, Q]
    s.imageMass = mass.mean().item<double>();
    const auto q = p / mass.unsqueeze(-1).clamp_min(1e-30);
    s.entropy = (-(q * q.clamp_min(1e-30).log()).sum(-1)).mean().item<double>();
    const int64_t n = p.size(-1);
    s.normalizedEntropy = n > 1 ? s.entropy / std::log(static_cast<double>(n)) : 0.0;
    const auto map = attentionMap(probs, -1).reshape({rows, cols});
    const double total = map.sum().item<double>();
    if (total > 0) {
        const auto r = torch::arange(rows, torch::kFloat64).unsqueeze(1);
        const auto c = torch::arange(cols, torch::kFloat64).unsqueeze(0);
        s.centreRow = (map * r).sum().item<double>() / total;
        s.centreCol = (map * c).sum().item<double>() / total;
    }
    return s;
}

double attentionShift(const torch::Tensor& from, const torch::Tensor& to)
{
    if (!from.sizes().equals(to.sizes()))
        throw std::invalid_argument("attentionShift: the two captures differ in shape");
    auto normalised = [](const torch::Tensor& probs) {
        const auto map = attentionMap(probs, -1);
        return map / map.sum().clamp_min(1e-30);
    };
    return 0.5 * (normalised(to) - normalised(from)).abs().sum().item<double>();
}

} // namespace ropescope::model
