#include "core/model/analysis/own_prior.h"

#include "kernels/rotary.h"

#include <torch/types.h>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ropescope::model {

namespace {

// A rotary table for `heads` heads: [L, d] tables serve every head as they are; per-head tables
// [heads', L, d] (per-head rotary on heads' KV heads) are repeated over each group, as the decoder does.
torch::Tensor forHeads(const torch::Tensor& table, int64_t heads)
{
    return table.dim() == 3 && table.size(0) != heads ? table.repeat_interleave(heads / table.size(0), 0) : table;
}

} // namespace

int64_t queryIndex(const AttentionRun& run, const MapToken& token)
{
    if (!token.answer)
        return token.index;
    const int64_t promptLength = static_cast<int64_t>(run.prompt.ids.size());
    return token.index == promptLength ? promptLength - 1 : token.index - 1;
}

double pearson(const std::vector<float>& a, const std::vector<float>& b)
{
    const size_t n = std::min(a.size(), b.size());
    if (n < 2)
        return 0;
    double ma = 0, mb = 0;
    for (size_t i = 0; i < n; ++i) {
        ma += a[i];
        mb += b[i];
    }
    ma /= static_cast<double>(n);
    mb /= static_cast<double>(n);
    double sab = 0, saa = 0, sbb = 0;
    for (size_t i = 0; i < n; ++i) {
        const double da = a[i] - ma, db = b[i] - mb;
        sab += da * db;
        saa += da * da;
        sbb += db * db;
    }
    return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

std::vector<OwnPrior> ownPositionalPriors(const Vlm& vlm, const AttentionRun& run, int layer, const MapToken& token)
{
    const size_t c = run.captured(layer);
    const DecoderOutput& prefill = run.result.prefill;
    if (c >= prefill.meanQueries.size())
        throw std::invalid_argument("the run kept no mean queries and keys (AttentionQuery::meanQueryKey)");
    torch::NoGradGuard noGrad;
    const TextConfig& text = vlm.config().text;
    const geometry::PositionTable& table = run.result.layerTables.at(static_cast<size_t>(layer));
    const torch::Tensor q = prefill.meanQueries[c].to(torch::kFloat32); // [heads, d]
    const torch::Tensor& keys = prefill.meanKeys[c];
    const int64_t heads = q.size(0);
    const torch::Device device = q.device();

    // The query at its position (past the prompt for an answer token's predecessor, as decoding places it).
    const int64_t t = queryIndex(run, token), length = table.size();
    const LayerRotary atQuery = t < length ? rotaryForTable(table, text, device, t, 1)
                                           : rotaryForTable(table, text, device, length, 1, static_cast<double>(t - length));
    const torch::Tensor qRot =
        kernels::applyRotary(q.unsqueeze(1), forHeads(atQuery.cos, heads), forHeads(atQuery.sin, heads)); // [heads, 1, d]

    // Every image token at its own position, with the key head each query head reads.
    const torch::Tensor image = torch::tensor(run.prompt.imageTokens, torch::kInt64).to(device);
    const LayerRotary all = rotaryForTable(table, text, device, 0, length);
    const torch::Tensor k =
        keys.to(torch::kFloat32).repeat_interleave(heads / keys.size(0), 0).unsqueeze(1).expand({-1, image.size(0), -1});
    const torch::Tensor kRot = kernels::applyRotary(k, forHeads(all.cos, heads).index_select(-2, image),
                                                    forHeads(all.sin, heads).index_select(-2, image)); // [heads, image, d]

    const torch::Tensor scores = (kRot * qRot).sum(-1) / std::sqrt(static_cast<double>(text.headDim()));
    const torch::Tensor prior = torch::softmax(scores.to(torch::kFloat64), 1).to(torch::kCPU, torch::kFloat32).contiguous();
    const torch::Tensor rows = run.tokenAttention(c, token);
    std::vector<OwnPrior> out(static_cast<size_t>(heads));
    for (int64_t h = 0; h < heads; ++h) {
        OwnPrior& p = out[static_cast<size_t>(h)];
        p.prior.assign(prior[h].data_ptr<float>(), prior[h].data_ptr<float>() + prior.size(1));
        p.actual = headMap(rows, HeadChoice{HeadChoice::Kind::Index, static_cast<int>(h)});
        p.correlation = pearson(p.prior, p.actual);
    }
    return out;
}

OwnPrior ownPositionalPrior(const Vlm& vlm, const AttentionRun& run, int layer, int head, const MapToken& token)
{
    std::vector<OwnPrior> priors = ownPositionalPriors(vlm, run, layer, token);
    if (head < 0 || head >= static_cast<int>(priors.size()))
        throw std::invalid_argument("head " + std::to_string(head) + " is outside 0.." + std::to_string(priors.size() - 1));
    return std::move(priors[static_cast<size_t>(head)]);
}

OwnPrior ownPositionalPrior(const Vlm& vlm, const AttentionRun& run, int layer, const HeadChoice& head, const MapToken& token)
{
    if (head.kind == HeadChoice::Kind::Index)
        return ownPositionalPrior(vlm, run, layer, head.index, token);
    const std::vector<OwnPrior> priors = ownPositionalPriors(vlm, run, layer, token);
    OwnPrior out;
    out.prior.assign(priors.front().prior.size(), 0.0f); // probabilities: 0 is below every maximum too
    for (const OwnPrior& one : priors)
        for (size_t i = 0; i < one.prior.size(); ++i)
            out.prior[i] = head.kind == HeadChoice::Kind::Max ? std::max(out.prior[i], one.prior[i])
                                                              : out.prior[i] + one.prior[i] / static_cast<float>(priors.size());
    out.actual = headMap(run.tokenAttention(run.captured(layer), token), head);
    out.correlation = pearson(out.prior, out.actual);
    return out;
}

} // namespace ropescope::model
