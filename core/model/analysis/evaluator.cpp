#include "core/model/analysis/evaluator.h"

#include "core/geometry/age.h"
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/attention_stats.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>
#include <QDir>

namespace ropescope::model {
namespace {

// The inference path of `attend` for one labelled question: the question's words x the image, every layer,
// one answer token; with another scheme, the same question under the model's own too.
class Evaluation {
public:
    Evaluation(const QString& modelDir, const std::optional<ModelScheme>& override)
        : model_(ModelBundle::load(modelDir)), vlm_(*model_.vlm), tok_(*model_.tokenizer), resolved_(resolveScheme(model_, override))
    {
        const ModelScheme& scheme = resolved_.scheme;
        result_.scheme = schemeLabel(scheme);
        if (vlm_.language().hasHarope())
            result_.scheme += " + HARoPE";
        result_.layers = vlm_.config().text.layers;
        result_.swapped = swapped();
    }

    // `mask`: the 8x8 cells the question is about; grounding is measured only where the image has that grid.
    void add(int64_t index, const QImage& image, const QString& question, const QString& answer, const QString& type,
             const std::array<bool, 64>* mask)
    {
        EvalSample sample;
        sample.index = index;
        sample.type = type.isEmpty() ? QString("all") : type;
        AttentionQuery query;
        query.images = {image};
        query.question = question;
        query.compareOwn = swapped();
        const AttentionRun run = runAttention(vlm_, tok_, query, resolved_);
        const ForwardResult& out = run.result;
        const auto layers = static_cast<size_t>(result_.layers);
        if (swapped())
            for (size_t l = 0; l < layers; ++l)
                sample.shift.push_back(attentionShift(run.ownResult->prefill.attentions[l], out.prefill.attentions[l]));

        // The first answer word (chat models answer in sentences; the task's answers are one word).
        const QString said = run.answer.section(' ', 0, 0).remove(QChar('.')).toLower();
        sample.right = said == answer.toLower();
        measureGrounding(sample, run, mask);
        samples_.push_back(std::move(sample));
    }

    EvalResult finish() { return reduceEval(result_, std::move(samples_)); }

private:
    void measureGrounding(EvalSample& sample, const AttentionRun& run, const std::array<bool, 64>* mask) const
    {
        const ForwardResult& out = run.result;
        const int cells = 64;
        if (!mask || run.prompt.imageTokens.size() != static_cast<size_t>(cells))
            return;
        const int inMask = static_cast<int>(std::count(mask->begin(), mask->end(), true));
        if (inMask == 0)
            return;
        std::vector<double> m(cells);
        for (int c = 0; c < cells; ++c)
            m[static_cast<size_t>(c)] = (*mask)[static_cast<size_t>(c)] ? 1.0 : 0.0;
        const auto weights = torch::tensor(m, torch::kFloat64);
        for (int l = 0; l < result_.layers; ++l) {
            const auto probs = out.prefill.attentions[static_cast<size_t>(l)].to(torch::kFloat64); // [H, Q, 64]
            const auto inside = (probs * weights).sum(-1) / probs.sum(-1).clamp_min(1e-30);
            sample.grounding.push_back(inside.mean().item<double>() / (static_cast<double>(inMask) / cells));
        }
    }

    bool swapped() const { return !resolved_.untrained.empty(); }
    ModelBundle model_;
    Vlm& vlm_;
    const Tokenizer& tok_;
    ResolvedScheme resolved_; // once, not per question
    EvalResult result_;       // the settings; the counts come from reduceEval
    std::vector<EvalSample> samples_;
};

} // namespace

EvalResult reduceEval(EvalResult r, std::vector<EvalSample> samples)
{
    std::sort(samples.begin(), samples.end(), [](const EvalSample& a, const EvalSample& b) { return a.index < b.index; });
    const auto layers = static_cast<size_t>(r.layers);
    r.samples = 0;
    r.correct = 0;
    r.byType.clear();
    r.grounding.assign(layers, 0.0);
    r.shift.assign(r.swapped ? layers : 0, 0.0);
    int grounded = 0;
    for (size_t i = 0; i < samples.size(); ++i) {
        const EvalSample& s = samples[i];
        if (i > 0 && samples[i - 1].index == s.index)
            throw ModelError("sample " + std::to_string(s.index) + " is measured twice (overlapping shards?)");
        if ((!s.grounding.empty() && s.grounding.size() != layers) || s.shift.size() != r.shift.size())
            throw ModelError("sample " + std::to_string(s.index) + ": its per-layer values do not match the model's " +
                             std::to_string(layers) + " layers");
        r.correct += s.right;
        auto& [correct, total] = r.byType[s.type];
        correct += s.right;
        ++total;
        ++r.samples;
        for (size_t l = 0; l < r.shift.size(); ++l)
            r.shift[l] += s.shift[l];
        if (!s.grounding.empty()) {
            for (size_t l = 0; l < layers; ++l)
                r.grounding[l] += s.grounding[l];
            ++grounded;
        }
    }
    for (double& g : r.grounding)
        g = grounded ? g / grounded : 0.0;
    if (!grounded)
        r.grounding.clear();
    for (double& d : r.shift)
        d /= std::max(1, r.samples);
    r.perSample = std::move(samples);
    return r;
}

EvalResult evaluate(const QString& modelDir, int samples, uint64_t seed, const std::optional<ModelScheme>& override, Rendering rendering,
                    EvalShard shard)
{
    Evaluation e(modelDir, override);
    for (int i = 0; i < samples; ++i) {
        if (!shard.has(i))
            continue;
        const SyntheticSample s = SyntheticTask::sample(seed, static_cast<uint64_t>(i), rendering);
        e.add(i, s.image, s.question, s.answer, s.type, &s.mask);
    }
    EvalResult r = e.finish();
    r.rendering = rendering;
    return r;
}

EvalResult evaluateQuestions(const QString& modelDir, const std::vector<LabelledQuestion>& questions,
                             const std::optional<ModelScheme>& override, const std::function<void(int, int)>& progress, EvalShard shard)
{
    Evaluation e(modelDir, override);
    int done = 0;
    int64_t index = -1;
    for (const LabelledQuestion& q : questions) {
        if (!shard.has(++index))
            continue;
        QImage image;
        try {
            image = loadImage(q.image);
        } catch (const ModelError& error) {
            throw BadInputFile("line " + std::to_string(q.line) + ": " + error.what());
        }
        e.add(index, image, q.question, q.answer, q.type, q.mask ? &*q.mask : nullptr);
        if (progress)
            progress(++done, static_cast<int>(questions.size()));
    }
    return e.finish();
}

} // namespace ropescope::model
