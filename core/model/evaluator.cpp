#include "evaluator.h"

#include "attention_run.h"
#include "attention_stats.h"
#include "geometry/age.h"
#include "image_processor.h"
#include "synthetic_task.h"
#include "tokenizer.h"
#include "vlm.h"

#include <QDir>

namespace ropescope::model {

EvalResult evaluate(const QString& modelDir, int samples, uint64_t seed, const std::optional<ModelScheme>& override)
{
    Vlm vlm(modelDir);
    const ModelConfig& cfg = vlm.config();
    const Tokenizer tok = Tokenizer::load(QDir(modelDir).filePath("tokenizer.json"));
    const ResolvedScheme resolved = resolveScheme(vlm, modelDir, override); // once, not per sample
    const ModelScheme& scheme = resolved.scheme;
    const bool swapped = !resolved.untrained.empty();
    EvalResult r;
    r.scheme = geometry::schemeName(scheme.params.kind);
    if (!scheme.age.empty())
        r.scheme += " + AGE " + QString::fromStdString(scheme.age);
    if (vlm.language().hasHarope())
        r.scheme += " + HARoPE";
    r.grounding.assign(static_cast<size_t>(cfg.text.layers), 0.0);
    if (swapped)
        r.shift.assign(static_cast<size_t>(cfg.text.layers), 0.0);
    const int grid = SyntheticTask::kGrid, cells = grid * grid;

    for (int i = 0; i < samples; ++i) {
        const SyntheticSample s = SyntheticTask::sample(seed, static_cast<uint64_t>(i));
        // The inference path of `attend`: the question's words x the image, every layer, one answer token;
        // with another scheme, the same sample under the model's own too (the image's vision is cached).
        AttentionQuery query;
        query.image = s.image;
        query.question = s.question;
        query.compareOwn = swapped;
        const AttentionRun run = runAttention(vlm, tok, query, resolved);
        const ForwardResult& out = run.result;
        if (swapped)
            for (size_t l = 0; l < r.shift.size(); ++l)
                r.shift[l] += attentionShift(run.ownResult->prefill.attentions[l], out.prefill.attentions[l]);

        const bool right = tok.decode({run.generated.front()}, true) == s.answer;
        r.correct += right;
        auto& [correct, total] = r.byType[s.type];
        correct += right;
        ++total;

        int inMask = 0;
        std::vector<float> mask(static_cast<size_t>(cells));
        for (int c = 0; c < cells; ++c) {
            mask[static_cast<size_t>(c)] = s.mask[static_cast<size_t>(c)] ? 1.0f : 0.0f;
            inMask += s.mask[static_cast<size_t>(c)];
        }
        const auto m = torch::tensor(mask);
        for (int l = 0; l < cfg.text.layers; ++l) {
            const auto probs = out.prefill.attentions[static_cast<size_t>(l)].to(torch::kFloat64); // [H, Q, 64]
            const auto inside = (probs * m.to(torch::kFloat64)).sum(-1) / probs.sum(-1).clamp_min(1e-30);
            r.grounding[static_cast<size_t>(l)] += inside.mean().item<double>() / (static_cast<double>(inMask) / cells);
        }
        ++r.samples;
    }
    for (double& g : r.grounding)
        g /= std::max(1, r.samples);
    for (double& d : r.shift)
        d /= std::max(1, r.samples);
    return r;
}

} // namespace ropescope::model
