#include "core/model/engine/model_bundle.h"

#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"

#include <QDir>

namespace ropescope::model {

ModelBundle ModelBundle::load(const QString& dir)
{
    return load(dir, std::make_shared<Vlm>(dir));
}

ModelBundle ModelBundle::load(const QString& dir, std::shared_ptr<Vlm> vlm)
{
    ModelBundle m;
    m.dir = dir;
    m.vlm = std::move(vlm);
    m.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::load(QDir(dir).filePath("tokenizer.json")));
    m.own = recordedScheme(dir); // a malformed "ropescope" record fails here, not at the first run
    if (!hasRecordedScheme(dir)) // a Hub checkpoint: its family's own placement (glm-v for GLM-V, mrope for Qwen)
        m.own.params = geometry::defaultSchemeParams(ownSchemeKind(m.vlm->config()));
    m.preprocess = loadPreprocessOptions(dir, m.vlm->config());
    m.taskModel = isTaskModel(dir);
    return m;
}

} // namespace ropescope::model
