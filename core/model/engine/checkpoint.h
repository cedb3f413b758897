#pragma once
#include "core/model/engine/model_config.h"
#include "core/model/engine/safetensors.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <QString>

#include <map>
#include <memory>
#include <vector>

namespace ropescope::model {

// The tensors of a Hugging Face checkpoint folder: model.safetensors, or shards listed in
// model.safetensors.index.json. Names are looked up in both layouts (model.* / visual.* and the newer
// model.language_model.* / model.visual.*), so the model code asks for the classic names.
class Checkpoint {
public:
    static Checkpoint open(const QString& dir);
    // Random weights with the shapes of a config.json (for benchmarks at real model sizes without a
    // multi-gigabyte file): norms 1, biases N(0, 0.02^2), matrices N(0, 1/fan_in); deterministic in `seed`.
    // `layers` > 0 keeps the first that many decoder layers (real shapes of a model too large for the machine:
    // `bench model --layers`); their kinds (DeltaNet, dense or sparse MLP) are the config's, except that a hybrid
    // stack whose first layers are all DeltaNet ends in an attention layer (the views need one).
    // `bf16Values`: every matrix holds bf16 values, as the checkpoints on the Hub store them (and so runs on the
    // CPU's AMX tiles where a real model would: bench model).
    static Checkpoint random(const QString& configPath, uint64_t seed = 20261121, int layers = 0, bool bf16Values = false);

    const ModelConfig& config() const { return config_; }
    const QString& dir() const { return dir_; }
    bool has(const std::string& name) const;
    // Qwen3.5's multi-token-prediction head (`mtp.*`): loaded by nothing (RopeScope decodes one token per
    // step), counted so the commands can say so.
    int unusedMtpTensors() const { return unusedMtp_; }
    // The shape a tensor is stored with (empty when missing, or for random weights): for layouts told apart by
    // shape (qwen3_vl_moe's fused experts).
    std::vector<int64_t> storedShape(const std::string& name) const;
    // The first stored tensor (in name order) holding NaN or an infinity, "" when none does (and for random
    // weights): what a run whose logits are not finite reports. Reads every tensor: for that error only.
    std::string firstNonFiniteTensor() const;
    // float32 on the CPU; throws ModelError naming the tensor if missing or of another shape.
    at::Tensor tensor(const std::string& name, const std::vector<int64_t>& shape) const;

private:
    const std::pair<const SafeTensors*, const TensorInfo*> locate(const std::string& name) const;

    QString dir_;
    ModelConfig config_;
    bool random_ = false, bf16Values_ = false;
    int unusedMtp_ = 0;
    uint64_t seed_ = 0;
    std::vector<std::unique_ptr<SafeTensors>> files_;
    std::map<std::string, std::pair<const SafeTensors*, const TensorInfo*>> tensors_;
};

} // namespace ropescope::model
