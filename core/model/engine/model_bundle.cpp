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
    // A malformed "ropescope" record fails here, not at the first run; a Hub checkpoint gets its family's placement.
    m.own = recordedScheme(dir, ownSchemeKind(m.vlm->config()));
    m.preprocess = loadPreprocessOptions(dir, m.vlm->config());
    m.taskModel = isTaskModel(dir);
    return m;
}

} // namespace ropescope::model
