#include "attention_job.h"

#include "model/bundled_model.h"
#include "model/synthetic_task.h"
#include "model/tokenizer.h"
#include "model/vlm.h"

#include <QDir>

namespace ropescope::gui {

std::shared_ptr<AttentionModel> AttentionModel::load(const QString& dir)
{
    auto m = std::make_shared<AttentionModel>();
    m->dir = dir;
    try {
        m->vlm = std::make_shared<model::Vlm>(dir);
        m->tokenizer = std::make_shared<const model::Tokenizer>(model::Tokenizer::load(QDir(dir).filePath("tokenizer.json")));
        m->own = model::recordedScheme(dir); // a malformed "ropescope" record fails here, not at the first run
        m->taskModel = model::isTaskModel(dir);
        m->preprocess = model::loadPreprocessOptions(dir, m->vlm->config());
    } catch (const std::exception& e) {
        m->error = e.what();
        m->vlm.reset();
        m->tokenizer.reset();
    }
    return m;
}

void AttentionJob::execute()
{
    try {
        if (schemes.empty()) {
            run = model::runAttention(*model->vlm, *model->tokenizer, model->dir, query);
            if (relevancy)
                relevancyOf = model::gradientRelevancy(*model->vlm, *run);
            return;
        }
        comparison = model::compareSchemes(*model->vlm, *model->tokenizer, model->dir, query, schemes, comparedLayer, [this](int done, int total) {
            if (progress)
                progress(done, total);
            return !cancelled.load();
        });
    } catch (const std::exception& e) {
        error = e.what();
    }
}

} // namespace ropescope::gui
