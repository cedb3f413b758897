#include "core/model/analysis/attention_analyses.h"

#include "core/model/engine/vlm.h"

namespace ropescope::model {

AttentionAnalyses analyseAttention(Vlm& vlm, const AttentionRun& run, const AnalysesAsked& asked)
{
    AttentionAnalyses out;
    if (asked.ownPrior) {
        out.ownPriorToken = run.questionTokens.back();
        for (int layer : run.layers)
            for (OwnPrior& p : ownPositionalPriors(vlm, run, layer, out.ownPriorToken))
                out.ownPriors.push_back(std::move(p));
    }
    if (asked.regionCells)
        out.region = regionAttention(run, *asked.regionCells, asked.regionHead);
    if (asked.relevancy)
        out.relevancy = gradientRelevancy(vlm, run);
    return out;
}

} // namespace ropescope::model
