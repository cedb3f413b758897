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

// One sample's outcome, kept so shards of an evaluation merge into exactly the one-process result: the
// means are sums over samples in index order, whichever process measured them.
struct EvalSample {
    int64_t index = 0; // in the stream or the question set
    QString type;      // "all" when the question has none
    bool right = false;
    std::vector<double> grounding; // per layer; empty when the question has no 8x8 mask
    std::vector<double> shift;     // per layer; only under another scheme
};

// The samples an evaluation measures: k with k mod count = index (a shard of a job array).
struct EvalShard {
    int index = 0, count = 1;
    bool has(int64_t k) const { return k % count == index; }
};

struct EvalResult {
    QString scheme;                          // the scheme the model ran with
    Rendering rendering = Rendering::OnGrid; // how the test pictures were drawn
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
    int layers = 0;                    // the model's decoder layers
    bool swapped = false;              // run under another scheme than the model's own (shift measured)
    std::vector<EvalSample> perSample; // ascending index
};
// The result of `samples` (any order; sorted by index here): counts, and the means summed in index order.
// Throws ModelError when an index repeats or a sample's per-layer lists do not match `layers`.
EvalResult reduceEval(EvalResult settings, std::vector<EvalSample> samples);

// Runs held-out synthetic samples (stream `seed`, disjoint from training seeds) through the normal
// inference path: tokenizer, image preprocessing, positions, decoder, greedy answer. `scheme` overrides
// the model's own (the adaptation cost of running a model under a scheme it was not trained with);
// `rendering` draws the same samples otherwise (Rendering::Drawn: the second test set).
EvalResult evaluate(const QString& modelDir, int samples, uint64_t seed, const std::optional<ModelScheme>& scheme = std::nullopt,
                    Rendering rendering = Rendering::OnGrid, EvalShard shard = {});
// The same on a user's own labelled questions (readQuestionSet): right when the answer's first word is the
// expected one (case and a full stop ignored). Questions without a type count under "all"; grounding uses
// the masks where given. `progress(done, total)` after each.
EvalResult evaluateQuestions(const QString& modelDir, const std::vector<LabelledQuestion>& questions,
                             const std::optional<ModelScheme>& scheme = std::nullopt, const std::function<void(int, int)>& progress = {},
                             EvalShard shard = {});

} // namespace ropescope::model
