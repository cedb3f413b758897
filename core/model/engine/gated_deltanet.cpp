#include "core/model/engine/gated_deltanet.h"

namespace ropescope::model {
namespace {

torch::Tensor l2Normalised(const torch::Tensor& x)
{
    return x * torch::rsqrt(x.pow(2).sum(-1, true) + 1e-6);
}

} // namespace

torch::Tensor gatedDeltaRule(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, const torch::Tensor& g,
                             const torch::Tensor& beta, torch::Tensor& state, int64_t chunk)
{
    const int64_t batch = q.size(0), heads = q.size(1), length = q.size(2), dk = q.size(3), dv = v.size(3);
    torch::Tensor s =
        state.defined() ? state.to(torch::kFloat32) : torch::zeros({batch, heads, dk, dv}, q.options().dtype(torch::kFloat32));
    std::vector<torch::Tensor> outputs;
    // Within a chunk, with G_t the cumulative log-decay from its start and S0 the state before it, the state
    // after token t is exp(G_t) S0 + sum_{s<=t} exp(G_t - G_s) k_s u_s^T, where the corrections u solve
    //   u_t + beta_t sum_{s<t} exp(G_t - G_s) (k_t . k_s) u_s = beta_t (v_t - exp(G_t) S0^T k_t),
    // a unit lower-triangular system. Outputs and the next S0 follow from u in closed form.
    for (int64_t from = 0; from < length; from += chunk) {
        const int64_t n = std::min(chunk, length - from);
        const auto qc = q.narrow(2, from, n).to(torch::kFloat32), kc = k.narrow(2, from, n).to(torch::kFloat32);
        const auto vc = v.narrow(2, from, n).to(torch::kFloat32);
        const auto bc = beta.narrow(2, from, n).to(torch::kFloat32).unsqueeze(-1); // [B, H, n, 1]
        const auto G = g.narrow(2, from, n).to(torch::kFloat32).cumsum(-1);        // [B, H, n]
        const auto causal = torch::ones({n, n}, G.options().dtype(torch::kBool)).tril();
        // exp(G_t - G_s) where s <= t, 0 elsewhere (masked before exp: G_t - G_s > 0 above the diagonal).
        const auto decay = torch::where(causal, G.unsqueeze(-1) - G.unsqueeze(-2), torch::full({}, -INFINITY, G.options())).exp();
        const auto strictly = decay.tril(-1);
        const auto system = torch::eye(n, G.options()) + bc * strictly * torch::matmul(kc, kc.transpose(-1, -2));
        const auto eG = G.exp().unsqueeze(-1); // [B, H, n, 1]
        const auto rhs = bc * (vc - eG * torch::matmul(kc, s));
        const auto u = torch::linalg_solve_triangular(system, rhs, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);
        outputs.push_back(eG * torch::matmul(qc, s) + torch::matmul(decay * torch::matmul(qc, kc.transpose(-1, -2)), u));
        const auto toEnd = (G.narrow(-1, n - 1, 1) - G).exp().unsqueeze(-1); // exp(G_n - G_s)
        s = G.narrow(-1, n - 1, 1).exp().unsqueeze(-1) * s + torch::matmul((kc * toEnd).transpose(-1, -2), u);
    }
    state = s;
    return torch::cat(outputs, 2).to(q.scalar_type());
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
    q = l2Normalised(q.repeat_interleave(hv / hk, 2)) / std::sqrt(static_cast<double>(dk));
    k = l2Normalised(k.repeat_interleave(hv / hk, 2));

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
