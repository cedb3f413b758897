#pragma once
#include "core/model/engine/model_scheme.h"
#include "core/model/training/question_set.h"
#include "core/model/training/synthetic_task.h"

#include <QString>

#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace ropescope::model {

struct EvalResult {
    QString scheme;                                // the scheme the model ran with
    Rendering rendering = Rendering::OnGrid;         // how the test pictures were drawn
    int samples = 0;
    std::map<QString, std::pair<int, int>> byType; // question type -> (correct, total)
    int correct = 0;
    // Per layer: mean over samples, heads and question tokens of (attention mass inside the ground-truth
    // mask / mass on the image) / (mask area / image area). 1.0 = chance. Empty when no question had a mask
    // on an 8x8 token grid.
    std::vector<double> grounding;
    // Per layer, only when run under a scheme other than the model's own: mean over samples of the
    // total-variation distance between the question->image attention under the two schemes (0 = the
    // same places, 1 = disjoint): how far swapping the scheme moves what the model looks at.
    std::vector<double> shift;
    double accuracy() const { return samples ? static_cast<double>(correct) / samples : 0.0; }
};

// Runs held-out synthetic samples (stream `seed`, disjoint from training seeds) through the normal
// inference path: tokenizer, image preprocessing, positions, decoder, greedy answer. `scheme` overrides
// the model's own (the adaptation cost of running a model under a scheme it was not trained with);
// `rendering` draws the same samples otherwise (Rendering::Drawn: the second test set).
EvalResult evaluate(const QString& modelDir, int samples, uint64_t seed, const std::optional<ModelScheme>& scheme = std::nullopt,
                    Rendering rendering = Rendering::OnGrid);
// The same on a user's own labelled questions (readQuestionSet): right when the answer's first word is the
// expected one (case and a full stop ignored). Questions without a type count under "all"; grounding uses
// the masks where given. `progress(done, total)` after each.
EvalResult evaluateQuestions(const QString& modelDir, const std::vector<LabelledQuestion>& questions,
                             const std::optional<ModelScheme>& scheme = std::nullopt, const std::function<void(int, int)>& progress = {});

} // namespace ropescope::model
