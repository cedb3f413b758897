#include "core/model/analysis/attention_stats.h"

#include <torch/types.h>
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ropescope::model {

torch::Tensor attentionMap(const torch::Tensor& probs, int head)
{
    const auto p = probs.to(torch::kFloat64);
    return (head < 0 ? p.mean(0) : p[head]).mean(0);
}

int cellCount(const GridShapes& grids)
{
    int n = 0;
    for (const GridShape& g : grids)
        n += g.cells();
    return n;
}

namespace {

void requireGrids(const torch::Tensor& probs, const GridShapes& grids, const char* what)
{
    if (probs.size(-1) != cellCount(grids) || grids.empty() || probs.size(-1) == 0)
        throw std::invalid_argument(std::string(what) + ": the capture's image tokens do not fill the image grids");
}

// Each image's sum of a mean map over every image's cells.
std::vector<double> massesOf(const torch::Tensor& map, const GridShapes& grids)
{
    std::vector<double> out;
    int64_t first = 0;
    for (const GridShape& g : grids) {
        out.push_back(map.narrow(0, first, g.cells()).sum().item<double>());
        first += g.cells();
    }
    return out;
}

} // namespace

std::vector<double> imageMasses(const torch::Tensor& probs, const GridShapes& grids)
{
    requireGrids(probs, grids, "imageMasses");
    return massesOf(attentionMap(probs, -1).to(torch::kCPU), grids);
}

std::vector<double> imageShares(const torch::Tensor& probs, const GridShapes& grids)
{
    return sharesOf(imageMasses(probs, grids));
}

std::vector<double> sharesOf(std::vector<double> shares)
{
    double total = 0;
    for (double m : shares)
        total += m;
    for (double& m : shares)
        m = total > 0 ? m / total : 0.0;
    return shares;
}

AttentionStats attentionStats(const torch::Tensor& probs, const GridShapes& grids)
{
    requireGrids(probs, grids, "attentionStats");
    AttentionStats s;
    const auto p = probs.to(torch::kFloat64); // [H, Q, N]
    const auto mass = p.sum(-1);              // [H, Q]
    s.imageMass = mass.mean().item<double>();
    const auto q = p / mass.unsqueeze(-1).clamp_min(1e-30);
    s.entropy = (-(q * q.clamp_min(1e-30).log()).sum(-1)).mean().item<double>();
    const int64_t n = p.size(-1);
    s.normalizedEntropy = n > 1 ? s.entropy / std::log(static_cast<double>(n)) : 0.0;
    const auto whole = attentionMap(probs, -1).to(torch::kCPU);
    const std::vector<double> masses = massesOf(whole, grids);
    s.centreImage = static_cast<int>(std::max_element(masses.begin(), masses.end()) - masses.begin());
    int64_t first = 0;
    for (int i = 0; i < s.centreImage; ++i)
        first += grids[static_cast<size_t>(i)].cells();
    const int rows = grids[static_cast<size_t>(s.centreImage)].rows, cols = grids[static_cast<size_t>(s.centreImage)].cols;
    const auto map = whole.narrow(0, first, rows * cols).reshape({rows, cols});
    const double total = map.sum().item<double>();
    if (total > 0) {
        const auto r = torch::arange(rows, torch::kFloat64).unsqueeze(1);
        const auto c = torch::arange(cols, torch::kFloat64).unsqueeze(0);
        s.centreRow = (map * r).sum().item<double>() / total;
        s.centreCol = (map * c).sum().item<double>() / total;
    }
    return s;
}

std::vector<HeadStats> headStats(const torch::Tensor& probs, const GridShapes& grids)
{
    requireGrids(probs, grids, "headStats");
    const auto p = probs.to(torch::kCPU, torch::kFloat64); // [H, Q, N]
    const int64_t n = p.size(-1);
    const auto mass = p.sum(-1);                                          // [H, Q]
    const auto share = (p / mass.unsqueeze(-1).clamp_min(1e-30)).mean(1); // [H, N], each row sums to 1
    const int64_t top = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(0.01 * static_cast<double>(n))));
    const auto topShare = std::get<0>(share.topk(top, -1)).sum(-1);
    std::vector<torch::Tensor> borders, firsts;
    for (const GridShape& g : grids) {
        auto border = torch::zeros({g.rows, g.cols}, torch::kBool);
        border.select(0, 0).fill_(true);
        border.select(0, g.rows - 1).fill_(true);
        border.select(1, 0).fill_(true);
        border.select(1, g.cols - 1).fill_(true);
        borders.push_back(border.flatten());
        auto first = torch::zeros({g.cells()}, torch::kBool);
        first[0] = true;
        firsts.push_back(first);
    }
    const auto borderShare = (share * torch::cat(borders).to(torch::kFloat64)).sum(-1);
    const auto firstShare = (share * torch::cat(firsts).to(torch::kFloat64)).sum(-1);
    const auto entropy = -(share * share.clamp_min(1e-30).log()).sum(-1);
    std::vector<HeadStats> out(static_cast<size_t>(p.size(0)));
    for (int64_t h = 0; h < p.size(0); ++h) {
        HeadStats& s = out[static_cast<size_t>(h)];
        s.imageMass = mass[h].mean().item<double>();
        s.normalizedEntropy = n > 1 ? entropy[h].item<double>() / std::log(static_cast<double>(n)) : 0.0;
        s.topShare = topShare[h].item<double>();
        s.borderShare = borderShare[h].item<double>();
        s.firstShare = firstShare[h].item<double>();
    }
    return out;
}

HeadStats meanOverHeads(const std::vector<HeadStats>& heads)
{
    HeadStats m;
    for (const HeadStats& h : heads) {
        m.imageMass += h.imageMass;
        m.normalizedEntropy += h.normalizedEntropy;
        m.topShare += h.topShare;
        m.borderShare += h.borderShare;
        m.firstShare += h.firstShare;
    }
    const double n = static_cast<double>(std::max<size_t>(1, heads.size()));
    m.imageMass /= n;
    m.normalizedEntropy /= n;
    m.topShare /= n;
    m.borderShare /= n;
    m.firstShare /= n;
    return m;
}

std::vector<double> LayerHeadMaps::imageMass() const
{
    std::vector<double> mass;
    for (const HeadStats& s : stats)
        mass.push_back(s.imageMass);
    return mass;
}

LayerHeadMaps layerHeadMaps(const std::vector<torch::Tensor>& layers, const GridShapes& grids)
{
    LayerHeadMaps out;
    for (const torch::Tensor& probs : layers) {
        const std::vector<HeadStats> stats = headStats(probs, grids);
        out.stats.insert(out.stats.end(), stats.begin(), stats.end());
        out.heads = static_cast<int>(probs.size(0));
        const torch::Tensor maps = probs.to(torch::kCPU, torch::kFloat64).mean(1).to(torch::kFloat32).contiguous(); // [heads, N]
        for (int64_t h = 0; h < maps.size(0); ++h)
            out.maps.emplace_back(maps[h].data_ptr<float>(), maps[h].data_ptr<float>() + maps.size(1));
    }
    return out;
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
