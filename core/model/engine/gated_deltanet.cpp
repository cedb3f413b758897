#include "core/model/engine/gated_deltanet.h"

#include <torch/types.h>
#include <torch/nn/functional/linear.h>
#include <torch/nn/functional/activation.h>
#include <torch/nn/functional/conv.h>
#include <algorithm>
#include <cmath>
#include <vector>

namespace ropescope::model {
namespace {

// x [B, L, H, d] with each head `groups` times in a row, as repeat_interleave(groups, 2) gives, through a broadcast
// view: repeat_interleave builds an index tensor from its count, which a CUDA graph cannot capture.
torch::Tensor eachHeadRepeated(const torch::Tensor& x, int64_t groups)
{
    if (groups == 1)
        return x;
    return x.unsqueeze(3).expand({x.size(0), x.size(1), x.size(2), groups, x.size(3)}).reshape({x.size(0), x.size(1), -1, x.size(3)});
}

torch::Tensor l2Normalised(const torch::Tensor& x)
{
    return x * torch::rsqrt(x.pow(2).sum(-1, true) + 1e-6);
}

} // namespace

torch::Tensor gatedDeltaRule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& g,
                             const torch::Tensor& beta, torch::Tensor& state, int64_t chunk)
{
    const int64_t batch = q.size(0), heads = q.size(1), length = q.size(2), dk = q.size(3), dv = v.size(3);
    const auto f32 = q.options().dtype(torch::kFloat32);
    torch::Tensor s = state.defined() ? state.to(torch::kFloat32) : torch::zeros({batch, heads, dk, dv}, f32);
    if (length == 1) {
        // A decoding step: the rule itself, 25 operators (about 8 kernels) where the chunk form below dispatches 78
        // for one token (on a GPU each a launch, most of a step's time there without a CUDA graph).
        const auto kt = k.to(torch::kFloat32), vt = v.to(torch::kFloat32);                                  // [B, H, 1, d]
        const auto decayed = s * g.to(torch::kFloat32).exp().unsqueeze(-1);                                 // exp(g) S
        const auto correction = (vt - torch::matmul(kt, decayed)) * beta.to(torch::kFloat32).unsqueeze(-1); // beta (v - S^T k)
        state = torch::baddbmm(decayed.reshape({-1, dk, dv}), kt.reshape({-1, dk, 1}), correction.reshape({-1, 1, dv}))
                    .reshape({batch, heads, dk, dv});
        return torch::matmul(q.to(torch::kFloat32), state).to(q.scalar_type());
    }
    // Within a chunk, with G_t the cumulative log-decay from its start and S0 the state before it, the state
    // after token t is exp(G_t) S0 + sum_{s<=t} exp(G_t - G_s) k_s u_s^T, where the corrections u solve
    //   u_t + beta_t sum_{s<t} exp(G_t - G_s) (k_t . k_s) u_s = beta_t (v_t - exp(G_t) S0^T k_t),
    // a unit lower-triangular system A u = beta v - (beta exp(G) k) S0. So u = U - W S0 with U = A^-1 beta v and
    // W = A^-1 (beta exp(G) k), neither depending on S0: every chunk's U, W, its output map and its state map are
    // computed at once, in batched operations over [B, H, chunks]. Only one operation per chunk stays sequential:
    //   o = (exp(G) q - P W) S0 + P U               (P = the chunk's causal exp(G_t - G_s) q_t . k_s)
    //   S1 = (exp(G_n) I - K'^T W) S0 + K'^T U     (K' = k scaled by exp(G_n - G_s))
    // The tail is padded with tokens that change nothing (g = 0, beta = 0, k = q = v = 0) and dropped.
    const int64_t c = std::max<int64_t>(1, std::min(chunk, length)), chunks = (length + c - 1) / c, padded = chunks * c;
    auto blocks = [&](const torch::Tensor& t) { // [B, H, L, ...] -> [B, H, chunks, c, ...] in float32
        auto x = t.to(torch::kFloat32);
        if (padded != length) {
            std::vector<int64_t> shape = x.sizes().vec();
            shape[2] = padded - length;
            x = torch::cat({x, torch::zeros(shape, f32)}, 2);
        }
        std::vector<int64_t> shape = x.sizes().vec();
        shape[2] = c;
        shape.insert(shape.begin() + 2, chunks);
        return x.reshape(shape);
    };
    const auto qc = blocks(q), kc = blocks(k), vc = blocks(v), bc = blocks(beta).unsqueeze(-1); // bc [B, H, N, c, 1]
    const auto G = blocks(g).cumsum(-1);                                                        // [B, H, N, c]
    const auto causal = torch::ones({c, c}, f32.dtype(torch::kBool)).tril();
    // exp(G_t - G_s) where s <= t, 0 elsewhere (masked before exp: G_t - G_s > 0 above the diagonal).
    const auto decay = torch::where(causal, G.unsqueeze(-1) - G.unsqueeze(-2), torch::full({}, -INFINITY, f32)).exp();
    const auto system = torch::eye(c, f32) + bc * decay.tril(-1) * torch::matmul(kc, kc.transpose(-1, -2));
    const auto eG = G.exp().unsqueeze(-1); // [B, H, N, c, 1]
    const auto solved = torch::linalg_solve_triangular(system, torch::cat({bc * vc, bc * eG * kc}, -1), /*upper=*/false, /*left=*/true,
                                                       /*unitriangular=*/true);
    const auto U = solved.narrow(-1, 0, dv), W = solved.narrow(-1, dv, dk);
    const auto P = decay * torch::matmul(qc, kc.transpose(-1, -2));
    const auto outState = eG * qc - torch::matmul(P, W); // [B, H, N, c, dk]: the output's map of S0
    const auto outFree = torch::matmul(P, U);            // [B, H, N, c, dv]
    const auto last = G.narrow(-1, c - 1, 1);            // [B, H, N, 1]
    const auto kEnd = kc * (last - G).exp().unsqueeze(-1);
    const auto stateMap = last.exp().unsqueeze(-1) * torch::eye(dk, f32) - torch::matmul(kEnd.transpose(-1, -2), W); // [B, H, N, dk, dk]
    const auto stateFree = torch::matmul(kEnd.transpose(-1, -2), U);                                                 // [B, H, N, dk, dv]
    // Both sequential steps of a chunk are one GEMM: stacked on the rows,
    //   [o ; S1] = [P U ; K'^T U] + [exp(G) q - P W ; exp(G_n) I - K'^T W] S0,
    // whose last dk rows are the next chunk's S0. Without autograd it is done in place in the chunk's slice of
    // `rows` ([B*H, chunks, c + dk, dv]): the loop launches one kernel per chunk, reading and writing the strided
    // slices as they are (out of place, baddbmm adds a copy of its addend). Autograd cannot differentiate through
    // slices of one buffer that later chunks overwrite, so a tracked run takes the out-of-place form.
    const int64_t bh = batch * heads;
    const auto maps = torch::cat({outState, stateMap}, -2).reshape({bh, chunks, c + dk, dk}).unbind(1);
    auto rows = torch::cat({outFree, stateFree}, -2).reshape({bh, chunks, c + dk, dv});
    auto sF = s.reshape({bh, dk, dv});
    torch::Tensor out;
    if (torch::GradMode::is_enabled() && rows.requires_grad()) {
        const auto addends = rows.unbind(1);
        std::vector<torch::Tensor> outputs;
        outputs.reserve(static_cast<size_t>(chunks));
        for (size_t n = 0; n < static_cast<size_t>(chunks); ++n) {
            const auto both = torch::baddbmm(addends[n], maps[n], sF);
            outputs.push_back(both.narrow(1, 0, c));
            sF = both.narrow(1, c, dk);
        }
        out = torch::stack(outputs, 1);
    } else {
        for (size_t n = 0; n < static_cast<size_t>(chunks); ++n) {
            auto slot = rows.select(1, static_cast<int64_t>(n));
            slot.baddbmm_(maps[n], sF);
            sF = slot.narrow(1, c, dk);
        }
        out = rows.narrow(2, 0, c);
    }
    state = sF.reshape({batch, heads, dk, dv}).clone(); // its own memory: the decoding cache keeps it, not `rows`
    return out.reshape({batch, heads, padded, dv}).narrow(2, 0, length).to(q.scalar_type());
}

torch::Tensor gatedDeltaNet(const torch::Tensor& x, const DeltaNetWeights& w, const TextConfig& cfg, DeltaNetState* state,
                            DeltaNetTrace* trace)
{
    namespace F = torch::nn::functional;
    const int64_t batch = x.size(0), n = x.size(1);
    const int64_t hk = cfg.linearKeyHeads, dk = cfg.linearKeyDim, hv = cfg.linearValueHeads, dv = cfg.linearValueDim;
    const int64_t channels = 2 * hk * dk + hv * dv, kernel = cfg.convKernel;
    // After the projections everything runs in float32 (as transformers keeps the delta rule and its norm):
    // the rule's outputs are small (rms ~0.03) and the gated RMSNorm scales their rounding up to the residual.
    const auto mixed = F::linear(x, w.qkvW).to(torch::kFloat32).transpose(1, 2); // [B, C, n]
    const auto z = F::linear(x, w.zW).view({batch, n, hv, dv});
    const auto beta = torch::sigmoid(F::linear(x, w.bW).to(torch::kFloat32));                                          // [B, n, Hv]
    const auto g = -w.aLog.to(torch::kFloat32).exp() * F::softplus(F::linear(x, w.aW).to(torch::kFloat32) + w.dtBias); // [B, n, Hv]

    // Causal depthwise conv over time, continuing the previous columns (zeros at the start), then SiLU.
    const auto previous =
        state && state->conv.defined() ? state->conv.to(torch::kFloat32) : torch::zeros({batch, channels, kernel}, mixed.options());
    const auto columns = torch::cat({previous, mixed}, 2); // [B, C, K + n]
    const auto conv = F::conv1d(columns, w.convW.to(torch::kFloat32), F::Conv1dFuncOptions().groups(channels)).narrow(2, 1, n);
    const auto act = torch::silu(conv).transpose(1, 2); // [B, n, C]
    auto q = act.narrow(2, 0, hk * dk).reshape({batch, n, hk, dk});
    auto k = act.narrow(2, hk * dk, hk * dk).reshape({batch, n, hk, dk});
    const auto v = act.narrow(2, 2 * hk * dk, hv * dv).reshape({batch, n, hv, dv});
    // Value head j reads key head j / (Hv / Hk).
    q = l2Normalised(eachHeadRepeated(q, hv / hk)) / std::sqrt(static_cast<double>(dk));
    k = l2Normalised(eachHeadRepeated(k, hv / hk));

    torch::Tensor recurrent = state ? state->recurrent : torch::Tensor();
    const auto core =
        gatedDeltaRule(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), g.transpose(1, 2), beta.transpose(1, 2), recurrent)
            .transpose(1, 2); // [B, n, Hv, dv]
    if (state) {
        state->conv = columns.narrow(2, n, kernel); // the last K pre-conv columns
        state->recurrent = recurrent;
    }
    if (trace)
        *trace = {g, beta, core};
    // Gated RMSNorm per value head: plain weight, then the SiLU gate.
    const auto normed = w.normW.to(torch::kFloat32) * (core * torch::rsqrt(core.pow(2).mean(-1, true) + cfg.rmsEps));
    const auto gated = (normed * torch::silu(z.to(torch::kFloat32))).to(x.scalar_type());
    return F::linear(gated.reshape({batch, n, hv * dv}), w.outW);
}

} // namespace ropescope::model
