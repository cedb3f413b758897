#include "app/gui/attention/attention_job.h"

#include "core/model/analysis/attention_analyses.h"
#include "core/model/engine/model_scheme.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "core/model/training/synthetic_task.h"

namespace ropescope::gui {

std::shared_ptr<AttentionModel> AttentionModel::load(const QString& dir)
{
    auto m = std::make_shared<AttentionModel>();
    try { // a folder without tokenizer.json is named before its weights are read (ModelBundle::load)
        static_cast<model::ModelBundle&>(*m) = model::ModelBundle::load(dir);
    } catch (const std::exception& e) {
        m->dir = dir;
        m->error = e.what();
    }
    return m;
}

void AttentionJob::execute()
{
    try {
        if (schemes.empty()) {
            run = model::runAttention(*model, query);
            model::AnalysesAsked asked; // the own prior and regions follow the user's picks on the pages, later
            asked.relevancy = relevancy;
            relevancyOf = model::analyseAttention(*model->vlm, *run, asked).relevancy;
            return;
        }
        comparison = model::compareSchemes(*model, query, schemes, comparedLayer, [this](int done, int total) {
            if (progress)
                progress(done, total);
            return !cancelled.load();
        });
    } catch (const std::exception& e) {
        error = e.what();
    }
}

} // namespace ropescope::gui
