#include "core/model/analysis/positional_bias.h"

#include "core/geometry/metrics.h"
#include "core/model/analysis/attention_request.h"
#include "core/model/analysis/attention_run.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>
#include <QDir>
#include <QJsonArray>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

namespace ropescope::model {
namespace {

double pearsonOf(const std::vector<double>& a, const std::vector<double>& b)
{
    const double n = static_cast<double>(a.size());
    if (a.size() < 2)
        return 0.0;
    const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n, mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ab += (a[i] - ma) * (b[i] - mb);
        aa += (a[i] - ma) * (a[i] - ma);
        bb += (b[i] - mb) * (b[i] - mb);
    }
    return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

std::vector<double> normalised(std::vector<double> map)
{
    const double sum = std::accumulate(map.begin(), map.end(), 0.0);
    for (double& v : map)
        v = sum > 0 ? v / sum : 1.0 / static_cast<double>(map.size());
    return map;
}

// The stats of one normalised map on the common grid (masses, centre) plus what needs the sample's own grid.
BiasSampleStats statsOf(const std::vector<double>& map, int rows, int cols)
{
    BiasSampleStats s;
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            const double v = map[static_cast<size_t>(r * cols + c)];
            s.centreRow += v * r;
            s.centreCol += v * c;
            s.firstRow += r == 0 ? v : 0.0;
            s.lastRow += r == rows - 1 ? v : 0.0;
            s.firstCol += c == 0 ? v : 0.0;
            s.lastCol += c == cols - 1 ? v : 0.0;
        }
    return s;
}

Estimate estimate(const std::vector<BiasSampleStats>& samples,
                  const std::function<double(const std::vector<const BiasSampleStats*>&)>& statistic, int resamples)
{
    std::vector<const BiasSampleStats*> all;
    for (const BiasSampleStats& s : samples)
        all.push_back(&s);
    Estimate e;
    e.value = e.low = e.high = statistic(all);
    if (all.size() < 2 || resamples < 1)
        return e;
    std::mt19937_64 random(20260524); // fixed: the same samples give the same interval
    std::uniform_int_distribution<size_t> pick(0, all.size() - 1);
    std::vector<double> values(static_cast<size_t>(resamples));
    std::vector<const BiasSampleStats*> drawn(all.size());
    for (double& v : values) {
        for (auto& d : drawn)
            d = all[pick(random)];
        v = statistic(drawn);
    }
    std::sort(values.begin(), values.end());
    const auto at = [&](double q) { return values[static_cast<size_t>(std::floor(q * static_cast<double>(values.size() - 1) + 0.5))]; };
    e.low = at(0.025);
    e.high = at(0.975);
    return e;
}

template <class Field> std::function<double(const std::vector<const BiasSampleStats*>&)> meanOf(Field field)
{
    return [field](const std::vector<const BiasSampleStats*>& s) {
        double sum = 0;
        for (const BiasSampleStats* x : s)
            sum += x->*field;
        return s.empty() ? 0.0 : sum / static_cast<double>(s.size());
    };
}

template <class Field> std::function<double(const std::vector<const BiasSampleStats*>&)> ratioOf(Field top, Field bottom)
{
    return [top, bottom](const std::vector<const BiasSampleStats*>& s) {
        double t = 0, b = 0;
        for (const BiasSampleStats* x : s) {
            t += x->*top;
            b += x->*bottom;
        }
        return b > 0 ? t / b : 0.0;
    };
}

} // namespace

BiasSummary summarize(const BiasCell& cell, int rows, int cols, int resamples)
{
    BiasSummary s;
    std::vector<BiasSampleStats> samples = cell.samples;
    std::sort(samples.begin(), samples.end(), [](const auto& a, const auto& b) { return a.sample < b.sample; });
    s.samples = static_cast<int>(samples.size());
    s.meanMap.assign(cell.mapSum.size(), 0.0);
    for (size_t k = 0; k < cell.mapSum.size(); ++k)
        s.meanMap[k] = s.samples ? static_cast<double>(cell.mapSum[k]) / kBiasFixedPoint / s.samples : 0.0;
    s.rowProfile.assign(static_cast<size_t>(rows), 0.0);
    s.colProfile.assign(static_cast<size_t>(cols), 0.0);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            s.rowProfile[static_cast<size_t>(r)] += s.meanMap[static_cast<size_t>(r * cols + c)];
            s.colProfile[static_cast<size_t>(c)] += s.meanMap[static_cast<size_t>(r * cols + c)];
        }
    s.centreRow = estimate(samples, meanOf(&BiasSampleStats::centreRow), resamples);
    s.centreCol = estimate(samples, meanOf(&BiasSampleStats::centreCol), resamples);
    const double midRow = (rows - 1) / 2.0, midCol = (cols - 1) / 2.0;
    s.rowOffset = {s.centreRow.value - midRow, s.centreRow.low - midRow, s.centreRow.high - midRow};
    s.colOffset = {s.centreCol.value - midCol, s.centreCol.low - midCol, s.centreCol.high - midCol};
    s.lastVsFirstRow = estimate(samples, ratioOf(&BiasSampleStats::lastRow, &BiasSampleStats::firstRow), resamples);
    s.lastVsFirstCol = estimate(samples, ratioOf(&BiasSampleStats::lastCol, &BiasSampleStats::firstCol), resamples);
    s.distanceCorrelation = estimate(samples, meanOf(&BiasSampleStats::distanceCorrelation), resamples);
    s.toLast = estimate(samples, meanOf(&BiasSampleStats::toLast), resamples);
    s.toFirst = estimate(samples, meanOf(&BiasSampleStats::toFirst), resamples);
    s.toTextBefore = estimate(samples, meanOf(&BiasSampleStats::toTextBefore), resamples);
    if (!cell.frameSum.empty()) {
        for (int64_t v : cell.frameSum)
            s.frameProfile.push_back(s.samples ? static_cast<double>(v) / kBiasFixedPoint / s.samples : 0.0);
        s.lastVsFirstFrame = estimate(samples, ratioOf(&BiasSampleStats::lastFrame, &BiasSampleStats::firstFrame), resamples);
    }
    return s;
}

std::vector<double> resampleMap(const std::vector<double>& map, int rows0, int cols0, int rows, int cols)
{
    if (rows0 == rows && cols0 == cols)
        return normalised(map);
    std::vector<double> out(static_cast<size_t>(rows) * static_cast<size_t>(cols));
    auto at = [&](int r, int c) { return map[static_cast<size_t>(std::clamp(r, 0, rows0 - 1) * cols0 + std::clamp(c, 0, cols0 - 1))]; };
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) {
            // The centre of cell (r, c) in the source grid's cell coordinates.
            const double y = (r + 0.5) * rows0 / rows - 0.5, x = (c + 0.5) * cols0 / cols - 0.5;
            const int y0 = static_cast<int>(std::floor(y)), x0 = static_cast<int>(std::floor(x));
            const double fy = y - y0, fx = x - x0;
            out[static_cast<size_t>(r * cols + c)] =
                (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x0 + 1)) + fy * ((1 - fx) * at(y0 + 1, x0) + fx * at(y0 + 1, x0 + 1));
        }
    return normalised(out);
}

namespace {

// The accumulation's settings from the request (labels, sorted layers, common grid), each checked against the model.
BiasAccumulation startAccumulation(const ModelBundle& model, const BiasRequest& request)
{
    Vlm& vlm = *model.vlm;
    const ModelConfig& cfg = vlm.config();
    if (request.indices.empty())
        throw ModelError("bias: no samples to measure");
    if (request.schemes.empty() || static_cast<qsizetype>(request.schemes.size()) != request.labels.size())
        throw ModelError("bias: one label per scheme");
    BiasAccumulation a;
    a.schemes = request.labels;
    const QString ownLabel = schemeLabel(model.own) + (vlm.language().hasHarope() ? " + HARoPE" : "");
    for (size_t s = 0; s < request.schemes.size(); ++s)
        if (!request.schemes[s])
            a.schemes[static_cast<qsizetype>(s)] = "own (" + ownLabel + ")";
    a.model = QDir(model.dir).dirName() + ", trained with " + ownLabel;
    a.layers = request.layers;
    if (a.layers.empty())
        a.layers = cfg.text.attentionLayers();
    std::sort(a.layers.begin(), a.layers.end());
    a.layers.erase(std::unique(a.layers.begin(), a.layers.end()), a.layers.end());
    if (a.layers.front() < 0 || a.layers.back() >= cfg.text.layers)
        throw ModelError("layer " + std::to_string(a.layers.front() < 0 ? a.layers.front() : a.layers.back()) + " is not a layer 0.." +
                         std::to_string(cfg.text.layers - 1) + " of the model");
    for (int l : a.layers)
        if (cfg.text.isLinear(l))
            throw ModelError("layer " + std::to_string(l) +
                             " is a Gated DeltaNet layer, with no attention and no positions; the attention layers are " +
                             attentionLayerList(cfg.text));
    a.rows = request.rows;
    a.cols = request.cols;
    a.frames = request.frames;
    a.keepSamples = request.keepSamples;
    if (a.rows < 1 || a.cols < 1 || a.frames < 0)
        throw ModelError("bias: no common grid");
    a.reset();
    return a;
}

// Sample `index`'s prompt; throws ModelError for a sample unlike the run's (image or video), or without a question.
AttentionRequest samplePrompt(const ModelBundle& model, const BiasSample& sample, int64_t index, bool videos)
{
    Vlm& vlm = *model.vlm;
    if (sample.video != videos)
        throw ModelError("sample " + std::to_string(index) +
                         (sample.video ? ": a video in a run of images" : ": an image in a run of videos") +
                         "; measure images and videos in separate runs");
    if (!sample.video && sample.frames.size() != 1)
        throw ModelError("sample " + std::to_string(index) + ": one image per sample");
    const AttentionRequest prompt = sample.video
        ? prepareVideoAttention(vlm, *model.tokenizer, sample.frames, sample.question, model.preprocess, vlm.device())
        : prepareAttention(vlm, *model.tokenizer, sample.frames, sample.question, model.preprocess, vlm.device());
    if (prompt.queryTokens.empty())
        throw ModelError("sample " + std::to_string(index) + ": the question is empty");
    return prompt;
}

// Adds one sample's attention row `p` (over every column before the question) to `cell`: its map on the common
// grid, its mass per frame and its stats. `distance`: each image token's distance to the first query token.
void accumulateMap(const BiasAccumulation& a, BiasCell& cell, const double* p, const AttentionRequest& prompt,
                   const std::vector<double>& distance, int64_t index)
{
    const PromptImage& grid = prompt.images.front(); // a video's frames share one grid
    const int patches = static_cast<int>(prompt.images.size()), frameCells = grid.cells();
    std::vector<double> raw;
    for (int64_t t : prompt.imageTokens)
        raw.push_back(p[t]);
    const std::vector<double> own = normalised(raw);
    // The within-frame map (a video's frames added up; an image's own map) and the mass per frame.
    std::vector<double> within(static_cast<size_t>(frameCells), 0.0), perFrame(static_cast<size_t>(patches), 0.0);
    for (int patch = 0; patch < patches; ++patch)
        for (int c = 0; c < frameCells; ++c) {
            within[static_cast<size_t>(c)] += own[static_cast<size_t>(patch * frameCells + c)];
            perFrame[static_cast<size_t>(patch)] += own[static_cast<size_t>(patch * frameCells + c)];
        }
    const std::vector<double> common = resampleMap(within, grid.rows, grid.cols, a.rows, a.cols);
    BiasSampleStats stats = statsOf(common, a.rows, a.cols);
    stats.sample = index;
    stats.distanceCorrelation = pearsonOf(own, distance);
    // VRoPE's boundary: the first visual tokens are the first frame's first row, the last ones the
    // last frame's last row.
    const size_t lastRow = static_cast<size_t>((patches - 1) * frameCells + (grid.rows - 1) * grid.cols);
    for (int c = 0; c < grid.cols; ++c) {
        stats.toFirst += raw[static_cast<size_t>(c)];
        stats.toLast += raw[lastRow + static_cast<size_t>(c)];
    }
    std::vector<double> frameMass;
    if (a.frames > 0) {
        frameMass = resampleMap(perFrame, 1, patches, 1, a.frames);
        stats.firstFrame = frameMass.front();
        stats.lastFrame = frameMass.back();
    }
    for (int64_t t = 0; t < prompt.imageTokens.front(); ++t)
        stats.toTextBefore += p[t];
    for (size_t k = 0; k < common.size(); ++k)
        cell.mapSum[k] += std::llround(common[k] * kBiasFixedPoint);
    for (size_t k = 0; k < frameMass.size(); ++k)
        cell.frameSum[k] += std::llround(frameMass[k] * kBiasFixedPoint);
    cell.samples.push_back(stats);
    if (a.keepSamples) {
        std::vector<double> kept = common;
        kept.insert(kept.end(), frameMass.begin(), frameMass.end());
        cell.sampleMaps.push_back(std::move(kept));
    }
}

// The scheme's geometry is recorded from one sample's layout: the smallest index measured, whatever the order.
void recordGeometry(BiasGeometry& g, const std::vector<int>& layers, const ForwardResult& r, int64_t index, int64_t firstQuery)
{
    if (g.sample >= 0 && index >= g.sample)
        return;
    g = {index, {}, {}};
    for (int layer : layers) {
        const geometry::PositionTable& table = r.layerTables[static_cast<size_t>(layer)];
        g.ptd.push_back(geometry::computePtd(table).mean);
        g.priorSpread.push_back(geometry::positionalPrior(table, static_cast<int>(firstQuery)).spread);
    }
}

} // namespace

BiasAccumulation measureBias(const ModelBundle& model, const BiasRequest& request)
{
    Vlm& vlm = *model.vlm;
    BiasAccumulation a = startAccumulation(model, request);
    std::vector<ResolvedScheme> resolved;
    for (const auto& scheme : request.schemes)
        resolved.push_back(resolveScheme(model, scheme));
    int64_t done = 0;
    for (const int64_t index : request.indices) {
        if (request.cancelled && request.cancelled())
            throw ModelError("bias: cancelled");
        const BiasSample sample = request.sampleAt(index);
        const AttentionRequest prompt = samplePrompt(model, sample, index, a.frames > 0);
        const int64_t firstQuery = prompt.queryTokens.front();
        std::vector<double> distance;
        for (int64_t t : prompt.imageTokens)
            distance.push_back(static_cast<double>(firstQuery - t));
        for (size_t s = 0; s < resolved.size(); ++s) {
            ForwardRequest f = prompt.forward;
            f.scheme = resolved[s].scheme.params;
            f.age = resolved[s].age;
            f.capture.layers = a.layers;
            f.generate = 0;
            // Every column before the question (text before the image, the image, its end marker), not just
            // the image's: the boundary measure needs the text before it too.
            f.capture.selection.cols = torch::arange(firstQuery, torch::kInt64).to(vlm.device());
            const ForwardResult r = vlm.run(f);
            for (size_t l = 0; l < a.layers.size(); ++l) {
                const torch::Tensor probs = r.prefill.attentions[l].to(torch::kCPU, torch::kFloat64); // [H, Q, firstQuery]
                const torch::Tensor rows[kBiasMaps] = {probs.mean(std::vector<int64_t>{0, 1}), probs.select(1, probs.size(1) - 1).mean(0)};
                for (int m = 0; m < kBiasMaps; ++m) {
                    const torch::Tensor row = rows[m].contiguous();
                    accumulateMap(a, a.cell(s, l, static_cast<BiasMap>(m)), row.data_ptr<double>(), prompt, distance, index);
                }
            }
            recordGeometry(a.geometry[s], a.layers, r, index, firstQuery);
        }
        if (request.progress)
            request.progress(++done, static_cast<int64_t>(request.indices.size()));
    }
    return a;
}

} // namespace ropescope::model
