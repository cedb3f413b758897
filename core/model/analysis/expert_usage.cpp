#include "core/model/analysis/expert_usage.h"

namespace ropescope::model {

ExpertUsage expertUsage(const std::vector<RouterTrace>& routers, const std::vector<bool>& visual, int experts)
{
    ExpertUsage u;
    u.experts = experts;
    for (bool v : visual)
        (v ? u.imageTokens : u.textTokens) += 1;
    for (const RouterTrace& r : routers) {
        const auto chosen = r.experts.to(c10::kCPU, c10::kLong).contiguous();
        const auto weights = r.weights.to(c10::kCPU, c10::kDouble).contiguous();
        if (chosen.dim() != 2 || chosen.size(0) != static_cast<int64_t>(visual.size()))
            throw ModelError("expert usage: layer " + std::to_string(r.layer) + "'s router covers " +
                             std::to_string(chosen.dim() == 2 ? chosen.size(0) : -1) + " tokens, the prompt has " +
                             std::to_string(visual.size()));
        u.topK = static_cast<int>(chosen.size(1));
        std::vector<double> count[2], weight[2];
        for (int kind = 0; kind < 2; ++kind) {
            count[kind].assign(static_cast<size_t>(experts), 0.0);
            weight[kind].assign(static_cast<size_t>(experts), 0.0);
        }
        const int64_t* e = chosen.data_ptr<int64_t>();
        const double* w = weights.data_ptr<double>();
        for (size_t token = 0; token < visual.size(); ++token)
            for (int64_t j = 0; j < chosen.size(1); ++j) {
                const size_t at = token * static_cast<size_t>(chosen.size(1)) + static_cast<size_t>(j);
                if (e[at] < 0 || e[at] >= experts)
                    throw ModelError("expert usage: layer " + std::to_string(r.layer) + " routes to expert " + std::to_string(e[at]));
                const int kind = visual[token] ? 0 : 1;
                count[kind][static_cast<size_t>(e[at])] += 1;
                weight[kind][static_cast<size_t>(e[at])] += w[at];
            }
        auto shares = [&](int kind, int64_t tokens) {
            std::vector<double> s(static_cast<size_t>(experts), 0.0);
            for (size_t x = 0; x < s.size(); ++x)
                s[x] = tokens > 0 ? count[kind][x] / static_cast<double>(tokens) : 0.0;
            return s;
        };
        auto means = [&](int kind) {
            std::vector<double> m(static_cast<size_t>(experts), 0.0);
            for (size_t x = 0; x < m.size(); ++x)
                m[x] = count[kind][x] > 0 ? weight[kind][x] / count[kind][x] : 0.0;
            return m;
        };
        u.layers.push_back(r.layer);
        u.imageShare.push_back(shares(0, u.imageTokens));
        u.textShare.push_back(shares(1, u.textTokens));
        u.imageWeight.push_back(means(0));
        u.textWeight.push_back(means(1));
    }
    return u;
}

ExpertUsage expertUsage(const AttentionRun& run, const ModelConfig& config)
{
    if (!config.text.moe.any())
        return {};
    std::vector<bool> visual;
    for (int64_t id : run.prompt.ids)
        visual.push_back(id == config.imageToken || id == config.videoToken);
    return expertUsage(run.result.prefill.routers, visual, config.text.moe.experts);
}

} // namespace ropescope::model
