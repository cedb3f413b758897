#include "core/model/analysis/evaluator.h"

#include "core/geometry/age.h"
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/attention_stats.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"

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
        const auto layers = static_cast<size_t>(vlm_.config().text.layers);
        result_.grounding.assign(layers, 0.0);
        if (swapped())
            result_.shift.assign(layers, 0.0);
    }

    // `mask`: the 8x8 cells the question is about; grounding is measured only where the image has that grid.
    void add(const QImage& image, const QString& question, const QString& answer, const QString& type, const std::array<bool, 64>* mask)
    {
        AttentionQuery query;
        query.images = {image};
        query.question = question;
        query.compareOwn = swapped();
        const AttentionRun run = runAttention(vlm_, tok_, query, resolved_);
        const ForwardResult& out = run.result;
        if (swapped())
            for (size_t l = 0; l < result_.shift.size(); ++l)
                result_.shift[l] += attentionShift(run.ownResult->prefill.attentions[l], out.prefill.attentions[l]);

        // The first answer word (chat models answer in sentences; the task's answers are one word).
        const QString said = run.answer.section(' ', 0, 0).remove(QChar('.')).toLower();
        const bool right = said == answer.toLower();
        result_.correct += right;
        auto& [correct, total] = result_.byType[type.isEmpty() ? QString("all") : type];
        correct += right;
        ++total;
        ++result_.samples;

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
        for (size_t l = 0; l < result_.grounding.size(); ++l) {
            const auto probs = out.prefill.attentions[l].to(torch::kFloat64); // [H, Q, 64]
            const auto inside = (probs * weights).sum(-1) / probs.sum(-1).clamp_min(1e-30);
            result_.grounding[l] += inside.mean().item<double>() / (static_cast<double>(inMask) / cells);
        }
        ++grounded_;
    }

    EvalResult finish()
    {
        for (double& g : result_.grounding)
            g = grounded_ ? g / grounded_ : 0.0;
        if (!grounded_)
            result_.grounding.clear();
        for (double& d : result_.shift)
            d /= std::max(1, result_.samples);
        return result_;
    }

private:
    bool swapped() const { return !resolved_.untrained.empty(); }
    ModelBundle model_;
    Vlm& vlm_;
    const Tokenizer& tok_;
    ResolvedScheme resolved_; // once, not per question
    EvalResult result_;
    int grounded_ = 0;
};

} // namespace

EvalResult evaluate(const QString& modelDir, int samples, uint64_t seed, const std::optional<ModelScheme>& override, Rendering rendering)
{
    Evaluation e(modelDir, override);
    for (int i = 0; i < samples; ++i) {
        const SyntheticSample s = SyntheticTask::sample(seed, static_cast<uint64_t>(i), rendering);
        e.add(s.image, s.question, s.answer, s.type, &s.mask);
    }
    EvalResult r = e.finish();
    r.rendering = rendering;
    return r;
}

EvalResult evaluateQuestions(const QString& modelDir, const std::vector<LabelledQuestion>& questions, const std::optional<ModelScheme>& override,
                             const std::function<void(int, int)>& progress)
{
    Evaluation e(modelDir, override);
    int done = 0;
    for (const LabelledQuestion& q : questions) {
        QImage image;
        try {
            image = loadImage(q.image);
        } catch (const ModelError& error) {
            throw BadInputFile("line " + std::to_string(q.line) + ": " + error.what());
        }
        e.add(image, q.question, q.answer, q.type, q.mask ? &*q.mask : nullptr);
        if (progress)
            progress(++done, static_cast<int>(questions.size()));
    }
    return e.finish();
}

} // namespace ropescope::model
