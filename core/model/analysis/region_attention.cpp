#include "core/model/analysis/region_attention.h"

#include <torch/types.h>
#include <QStringList>

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace ropescope::model {

std::vector<int> CellRegion::cells(int rows, int cols) const
{
    std::vector<int> out;
    const int r0 = std::clamp(std::min(row0, row1), 0, rows - 1), r1 = std::clamp(std::max(row0, row1), 0, rows - 1);
    const int c0 = std::clamp(std::min(col0, col1), 0, cols - 1), c1 = std::clamp(std::max(col0, col1), 0, cols - 1);
    for (int r = r0; r <= r1; ++r)
        for (int c = c0; c <= c1; ++c)
            out.push_back(r * cols + c);
    return out;
}

std::vector<int> CellRegion::tokensIn(const AttentionRequest& prompt) const
{
    if (image < 0 || static_cast<size_t>(image) >= prompt.images.size())
        throw std::invalid_argument("image " + std::to_string(image + 1) + " is not in the prompt, which has " +
                                    std::to_string(prompt.images.size()) + (prompt.images.size() == 1 ? " image" : " images"));
    const PromptImage& p = prompt.images[static_cast<size_t>(image)];
    if (std::max(row0, row1) >= p.rows || std::max(col0, col1) >= p.cols)
        throw std::invalid_argument(
            toString().toStdString() + " is outside " +
            (prompt.images.size() > 1 ? "image " + std::to_string(image + 1) + "'s " : std::string("the image's ")) +
            std::to_string(p.rows) + "x" + std::to_string(p.cols) + " grid of merged cells");
    std::vector<int> out = cells(p.rows, p.cols);
    for (int& c : out)
        c += p.first;
    return out;
}

QString CellRegion::toString() const
{
    const QString corners = QString("%1,%2,%3,%4").arg(row0).arg(col0).arg(row1).arg(col1);
    return image > 0 ? QString("%1:%2").arg(image + 1).arg(corners) : corners;
}

CellRegion CellRegion::parse(const QString& whole)
{
    QString text = whole;
    int image = 0;
    if (const qsizetype colon = text.indexOf(':'); colon >= 0) {
        bool ok = false;
        image = text.left(colon).trimmed().toInt(&ok) - 1;
        if (!ok || image < 0 || image >= kMaxPromptImages)
            throw std::invalid_argument("expected an image number from 1 to " + std::to_string(kMaxPromptImages) + " before ':', got '" +
                                        whole.toStdString() + "'");
        text = text.mid(colon + 1);
    }
    CellRegion region = parseCorners(text);
    region.image = image;
    return region;
}

CellRegion CellRegion::parseCorners(const QString& text)
{
    const QStringList parts = text.split(',');
    std::vector<int> v;
    for (const QString& p : parts) {
        bool ok = false;
        const int n = p.trimmed().toInt(&ok);
        if (!ok || n < 0)
            throw std::invalid_argument("expected cells as ROW,COL or ROW0,COL0,ROW1,COL1 (whole numbers from 0), got '" +
                                        text.toStdString() + "'");
        v.push_back(n);
    }
    if (v.size() == 2)
        return {v[0], v[1], v[0], v[1]};
    if (v.size() == 4)
        return {v[0], v[1], v[2], v[3]};
    throw std::invalid_argument("expected cells as ROW,COL or ROW0,COL0,ROW1,COL1, got '" + text.toStdString() + "'");
}

std::vector<int> RegionAttention::strongest(size_t capturedIndex, int count) const
{
    const std::vector<double>& s = share.at(capturedIndex);
    std::vector<int> order(s.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return s[static_cast<size_t>(a)] > s[static_cast<size_t>(b)]; });
    order.resize(std::min(order.size(), static_cast<size_t>(std::max(count, 0))));
    return order;
}

RegionAttention regionAttention(const AttentionRun& run, const std::vector<int>& cells, const HeadChoice& head)
{
    const int gridCells = static_cast<int>(run.prompt.imageTokens.size());
    if (cells.empty())
        throw std::invalid_argument("region: no cells selected");
    for (int c : cells)
        if (c < 0 || c >= gridCells)
            throw std::invalid_argument("region: cell " + std::to_string(c) + " is outside the prompt's " + std::to_string(gridCells) +
                                        " image tokens");
    RegionAttention r;
    r.cells = cells;
    std::sort(r.cells.begin(), r.cells.end());
    r.cells.erase(std::unique(r.cells.begin(), r.cells.end()), r.cells.end());
    r.area = static_cast<double>(r.cells.size()) / gridCells;
    r.tokens = run.mapTokens();
    r.layers = run.layers;
    const auto index = torch::tensor(std::vector<int64_t>(r.cells.begin(), r.cells.end()), torch::kInt64);
    for (size_t l = 0; l < run.layers.size(); ++l) {
        std::vector<double> mass, share;
        for (const MapToken& t : r.tokens) {
            const auto rows = run.tokenAttention(l, t).to(torch::kCPU, torch::kFloat64).select(1, 0); // [heads, image tokens]
            const auto inRegion = rows.index_select(1, index).sum(1), onImage = rows.sum(1);          // [heads]
            double m = 0, all = 0;
            if (head.kind == HeadChoice::Kind::Index) {
                m = inRegion[head.index].item<double>();
                all = onImage[head.index].item<double>();
            } else if (head.kind == HeadChoice::Kind::Max) {
                const int64_t h = inRegion.argmax().item<int64_t>();
                m = inRegion[h].item<double>();
                all = onImage[h].item<double>();
            } else {
                m = inRegion.mean().item<double>();
                all = onImage.mean().item<double>();
            }
            mass.push_back(m);
            share.push_back(all > 0 ? m / all : 0.0);
        }
        r.mass.push_back(std::move(mass));
        r.share.push_back(std::move(share));
    }
    return r;
}

} // namespace ropescope::model
