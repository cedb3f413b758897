#include "app/cli/bench_gemm_floor.h"

#include "app/cli/bench_timing.h"
#include "core/model/engine/dense.h"

#include <torch/types.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

namespace ropescope::cli {

namespace {

using Shape = std::pair<int64_t, int64_t>; // a weight's [out, in]

// Every projection of the dense layers, with how many layers have it.
std::map<Shape, int> projectionShapes(const model::TextConfig& t, int& sparseLayers)
{
    std::map<Shape, int> count;
    const int64_t h = t.hidden, d = t.headDim();
    sparseLayers = 0;
    for (int layer = 0; layer < t.layers; ++layer) {
        if (t.isLinear(layer)) {
            const int64_t hv = t.linearValueHeads, dv = t.linearValueDim;
            const int64_t channels = 2 * int64_t(t.linearKeyHeads) * t.linearKeyDim + hv * dv;
            for (const Shape& s : {Shape{channels, h}, Shape{hv * dv, h}, Shape{hv, h}, Shape{hv, h}, Shape{h, hv * dv}})
                ++count[s];
        } else {
            const int64_t q = int64_t(t.heads) * d, kv = int64_t(t.kvHeads) * d;
            for (const Shape& s : {Shape{t.attentionOutputGate ? 2 * q : q, h}, Shape{kv, h}, Shape{kv, h}, Shape{h, q}})
                ++count[s];
        }
        if (t.moe.isSparse(layer)) {
            ++sparseLayers;
            continue;
        }
        const int64_t m = t.intermediate;
        if (t.fusedGateUp)
            ++count[{2 * m, h}];
        else
            count[{m, h}] += 2;
        ++count[{h, m}];
    }
    return count;
}

} // namespace

QJsonObject benchGemmFloor(const model::TextConfig& text, int64_t tokens, int runs, const c10::TensorOptions& options,
                           const std::function<double()>& decoderPassMs, const std::function<void()>& sync)
{
    int sparseLayers = 0;
    const std::map<Shape, int> shapes = projectionShapes(text, sparseLayers);
    torch::NoGradGuard noGrad;
    torch::manual_seed(13);
    struct Operands {
        torch::Tensor x, w;
        int layers;
    };
    std::vector<Operands> operands;
    double flops = 0;
    for (const auto& [shape, layers] : shapes) {
        const auto [out, in] = shape;
        // bf16 values in the weight, as the prefill's (bench model's random checkpoint) hold
        const auto w = (torch::randn({out, in}) / std::sqrt(double(in))).to(torch::kBFloat16).to(torch::kFloat32);
        operands.push_back({torch::randn({tokens, in}).to(options), w.to(options), layers});
        flops += 2.0 * double(tokens) * double(in) * double(out) * layers;
    }
    auto floorMs = [&] {
        double total = 0;
        for (const Operands& o : operands) {
            const auto t0 = std::chrono::steady_clock::now();
            model::dense(o.x, o.w); // as the prefill runs it (over the cores)
            sync();
            total += o.layers * std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        }
        return total;
    };
    floorMs(); // untimed: threads, pages and BLAS buffers made once
    std::vector<double> floor, decoder, ratios;
    for (int i = 0; i < runs; ++i) {
        decoder.push_back(decoderPassMs());
        floor.push_back(floorMs());
        ratios.push_back(decoder.back() / floor.back());
    }
    // The FLOP limit adds what a prefill must compute besides its projections, at the rate the projections reached:
    // causal attention's two products over the earlier keys (2 L (L + 1) d FLOPs a head), and the delta rule's
    // three products with the state a token (6 dk dv a value head). The chunked rule and the explicit attention
    // path do more; this is the least.
    const double L = double(tokens);
    double other = 0;
    for (int layer = 0; layer < text.layers; ++layer)
        other += text.isLinear(layer) ? 6.0 * L * text.linearKeyDim * text.linearValueDim * text.linearValueHeads
                                      : 2.0 * L * (L + 1) * text.headDim() * text.heads;
    const double total = flops + other;
    std::vector<double> limitRatios;
    for (size_t i = 0; i < ratios.size(); ++i)
        limitRatios.push_back(ratios[i] * flops / total);
    QJsonObject row{{"gemm_floor_ms", median(floor)},
                    {"gemm_floor_decoder_ms", median(decoder)},
                    {"gemm_floor_gflop", flops / 1e9},
                    {"gemm_floor_gflops_per_s", flops / 1e6 / median(floor)},
                    {"decoder_over_gemm_floor", median(ratios)},
                    {"flop_limit_gflop", total / 1e9},
                    {"flop_limit_ms", median(floor) * total / flops},
                    {"decoder_over_flop_limit", median(limitRatios)}};
    if (sparseLayers > 0)
        row["gemm_floor_leaves_out_sparse_mlps"] = sparseLayers;
    return row;
}

} // namespace ropescope::cli
