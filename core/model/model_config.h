#pragma once
#include "safetensors.h"

#include <QString>

#include <string>
#include <vector>

namespace ropescope::model {

enum class Architecture { Qwen2VL, Qwen25VL };

struct VisionConfig {
    int depth = 32;
    int width = 1280;        // Qwen2-VL embed_dim, Qwen2.5-VL hidden_size
    int heads = 16;
    int mlpHidden = 5120;    // Qwen2-VL embed_dim * mlp_ratio, Qwen2.5-VL intermediate_size
    int outHidden = 1536;    // merger output = the decoder's hidden size
    int patchSize = 14;
    int temporalPatch = 2;
    int mergeSize = 2;
    int inChannels = 3;
    std::string act = "quick_gelu";
    // Qwen2.5-VL only
    std::vector<int> fullAttentionBlocks;
    int windowSize = 112;
    double tokensPerSecond = 2;

    int headDim() const { return width / heads; }
    int patchDim() const { return inChannels * temporalPatch * patchSize * patchSize; }
};

struct TextConfig {
    int hidden = 1536;
    int intermediate = 8960;
    int layers = 28;
    int heads = 12;
    int kvHeads = 2;
    int vocab = 151936;
    double rmsEps = 1e-6;
    double ropeTheta = 1e6;
    std::vector<int> mropeSection{16, 24, 24};
    bool tieEmbeddings = false;

    int headDim() const { return hidden / heads; }
};

struct ModelConfig {
    Architecture architecture = Architecture::Qwen2VL;
    TextConfig text;
    VisionConfig vision;
    int imageToken = 151655;
    int videoToken = 151656;
    int visionStart = 151652;
    int visionEnd = 151653;
    int eos = 151645;
    // HARoPE: per-head matrices in the checkpoint (see model README); detected at load.
    bool harope = false;
};

// Reads config.json in its Hub forms: flat Qwen2-VL / Qwen2.5-VL configs with rope_scaling.mrope_section,
// and the newer nesting with text_config / vision_config and rope_parameters. Throws ModelError naming
// the file and the key.
ModelConfig loadModelConfig(const QString& path);
ModelConfig parseModelConfig(const QByteArray& json, const QString& name);

} // namespace ropescope::model
