#include "core/model/engine/model_bundle.h"

#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"

#include "core/model/engine/safetensors.h"

#include <QDir>
#include <QFileInfo>

namespace ropescope::model {

namespace {

// A folder that has its config but no tokenizer: say what is missing and where it comes from, before the weights
// are read, not only that tokenizer.json could not be opened (issue 56 item 5). The CLI and the window both say it.
void requireTokenizer(const QString& dir)
{
    const QDir folder(dir);
    if (QFileInfo(folder.filePath("config.json")).isFile() && !QFileInfo::exists(folder.filePath("tokenizer.json")))
        throw BadInputFile(dir.toStdString() +
                           ": this model folder has no tokenizer.json, which RopeScope reads the question with. A checkpoint from "
                           "the Hugging Face Hub has it beside config.json and the weights: copy the model's own tokenizer.json in "
                           "(a tokenizer of another model reads the question into other ids)");
}

} // namespace

ModelBundle ModelBundle::load(const QString& dir)
{
    requireTokenizer(dir);
    return load(dir, std::make_shared<Vlm>(dir));
}

ModelBundle ModelBundle::load(const QString& dir, std::shared_ptr<Vlm> vlm)
{
    ModelBundle m;
    m.dir = dir;
    m.vlm = std::move(vlm);
    requireTokenizer(dir);
    m.tokenizer = std::make_shared<const Tokenizer>(Tokenizer::load(QDir(dir).filePath("tokenizer.json")));
    // A malformed "ropescope" record fails here, not at the first run; a Hub checkpoint gets its family's placement.
    m.own = recordedScheme(dir, ownSchemeKind(m.vlm->config()));
    m.preprocess = loadPreprocessOptions(dir, m.vlm->config());
    m.taskModel = isTaskModel(dir);
    return m;
}

} // namespace ropescope::model
