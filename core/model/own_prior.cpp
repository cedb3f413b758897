#include "own_prior.h"

#include "kernels/rotary.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ropescope::model {

namespace {

// One head's slice of a rotary table: [L, d] tables serve every head; [heads', L, d] tables (per-head
// rotary) give head h the slice of its group.
torch::Tensor headSlice(const torch::Tensor& table, int head, int heads)
{
    if (table.dim() == 2)
        return table;
    return table[head / (heads / table.size(0))];
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

OwnPrior ownPositionalPrior(const Vlm& vlm, const AttentionRun& run, int layer, int head, const MapToken& token)
{
    const size_t c = run.captured(layer);
    const DecoderOutput& prefill = run.result.prefill;
    if (c >= prefill.meanQueries.size())
        throw std::invalid_argument("the run kept no mean queries and keys (AttentionQuery::meanQueryKey)");
    const int heads = static_cast<int>(prefill.meanQueries[c].size(0));
    if (head < 0 || head >= heads)
        throw std::invalid_argument("head " + std::to_string(head) + " is outside 0.." + std::to_string(heads - 1));
    torch::NoGradGuard noGrad;
    const TextConfig& text = vlm.config().text;
    const geometry::PositionTable& table = run.result.layerTables.at(static_cast<size_t>(layer));
    const torch::Device device = prefill.meanQueries[c].device();

    // The query at its position (past the prompt for an answer token's predecessor, as decoding places it).
    const int64_t t = queryIndex(run, token), length = table.size();
    const LayerRotary atQuery = t < length ? rotaryForTable(table, text, device, t, 1)
                                           : rotaryForTable(table, text, device, length, 1, static_cast<double>(t - length));
    const torch::Tensor q = prefill.meanQueries[c][head].to(torch::kFloat32).view({1, -1});
    const torch::Tensor qRot = kernels::applyRotary(q, headSlice(atQuery.cos, head, heads), headSlice(atQuery.sin, head, heads));

    // Every image token at its own position, with the key head this query head reads.
    const torch::Tensor& keys = prefill.meanKeys[c];
    const torch::Tensor k = keys[head / (heads / static_cast<int>(keys.size(0)))].to(torch::kFloat32);
    const LayerRotary all = rotaryForTable(table, text, device, 0, length);
    const torch::Tensor image = torch::tensor(run.prompt.imageTokens, torch::kInt64).to(device);
    const torch::Tensor cosImage = headSlice(all.cos, head, heads).index_select(0, image);
    const torch::Tensor sinImage = headSlice(all.sin, head, heads).index_select(0, image);
    const torch::Tensor kRot = kernels::applyRotary(k.view({1, -1}).expand({image.size(0), -1}), cosImage, sinImage);

    const torch::Tensor scores = torch::matmul(kRot, qRot.view({-1})) / std::sqrt(static_cast<double>(text.headDim()));
    const torch::Tensor prior = torch::softmax(scores.to(torch::kFloat64), 0).to(torch::kCPU, torch::kFloat32).contiguous();

    OwnPrior out;
    out.prior.assign(prior.data_ptr<float>(), prior.data_ptr<float>() + prior.numel());
    out.actual = headMap(run.tokenAttention(c, token), HeadChoice{HeadChoice::Kind::Index, head});
    out.correlation = pearson(out.prior, out.actual);
    return out;
}

OwnPrior ownPositionalPrior(const Vlm& vlm, const AttentionRun& run, int layer, const HeadChoice& head, const MapToken& token)
{
    if (head.kind == HeadChoice::Kind::Index)
        return ownPositionalPrior(vlm, run, layer, head.index, token);
    const int heads = static_cast<int>(run.attention().at(run.captured(layer)).size(0));
    OwnPrior out;
    for (int h = 0; h < heads; ++h) {
        const OwnPrior one = ownPositionalPrior(vlm, run, layer, h, token);
        if (out.prior.empty())
            out.prior.assign(one.prior.size(), 0.0f); // probabilities: 0 is below every maximum too
        for (size_t i = 0; i < one.prior.size(); ++i)
            out.prior[i] = head.kind == HeadChoice::Kind::Max ? std::max(out.prior[i], one.prior[i]) : out.prior[i] + one.prior[i] / static_cast<float>(heads);
    }
    out.actual = headMap(run.tokenAttention(run.captured(layer), token), head);
    out.correlation = pearson(out.prior, out.actual);
    return out;
}

} // namespace ropescope::model
