#pragma once
// The analyses a front end asks for on top of one attention run: the model's own positional prior of a token,
// which tokens attend an image region, and the gradient relevancy of the answer. `attend` and batch items
// (app/cli/attend_run.cpp) and the Attention tab's job (app/gui/attention/attention_job.cpp) compute them
// here, then write or paint what they show: the computation is not written twice.
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/own_prior.h"
#include "core/model/analysis/region_attention.h"
#include "core/model/analysis/relevancy.h"

#include <optional>
#include <vector>

namespace ropescope::model {

struct AnalysesAsked {
    bool ownPrior = false;                       // of the row that predicts the answer (the question's last token)
    std::optional<std::vector<int>> regionCells; // image cells -> text (CellRegion::tokensIn): which tokens attend them
    HeadChoice regionHead;                       // the region's head (mean, max or one head)
    bool relevancy = false;                      // gradient relevancy of the answer's first token (Chefer et al. 2021)
};

struct AttentionAnalyses {
    MapToken ownPriorToken;
    std::vector<OwnPrior> ownPriors; // every captured layer's heads, layer-major
    std::optional<RegionAttention> region;
    std::optional<Relevancy> relevancy;
};

AttentionAnalyses analyseAttention(Vlm& vlm, const AttentionRun& run, const AnalysesAsked& asked);

} // namespace ropescope::model
