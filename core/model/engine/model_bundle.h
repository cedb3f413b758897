#pragma once
// What a model folder holds, read once: the VLM, its tokenizer, the scheme it was trained with, its image
// preprocessing. The CLI's commands, batch items and the GUI's Attention tab and Bias view all load a folder
// through ModelBundle::load, so a run never re-reads config.json and every front end sees the same model.
// (No LibTorch here: Vlm is only declared.)
#include "core/model/engine/model_scheme.h"
#include "core/model/engine/preprocess_config.h"

#include <QString>

#include <memory>

namespace ropescope::model {

class Vlm;
class Tokenizer;

struct ModelBundle {
    QString dir;
    std::shared_ptr<Vlm> vlm; // shared: a front end may replace its model while a run on the old one finishes
    std::shared_ptr<const Tokenizer> tokenizer;
    ModelScheme own;              // config.json's "ropescope" record (mrope for Hugging Face checkpoints)
    PreprocessOptions preprocess; // preprocessor_config.json
    bool taskModel = false;       // trained by RopeScope on its synthetic shapes task

    // On the CPU in float32. Throws what the readers throw (ModelError, io::IoError) naming the file.
    static ModelBundle load(const QString& dir);
    // Around a VLM the caller built (another device or dtype).
    static ModelBundle load(const QString& dir, std::shared_ptr<Vlm> vlm);
};

} // namespace ropescope::model
