#pragma once
#include "core/model/engine/model_scheme.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

#include <QString>

#include <functional>

namespace ropescope::model {

struct TrainOptions {
    ModelScheme scheme;
    QString output;           // model folder to write
    QString from;             // base model to fine-tune (decoder only, vision and merger frozen); empty: from scratch
    bool trainVision = false; // with `from`: train the vision tower and merger too (continuing a base model)
    bool harope = false;      // add HARoPE head maps (starting at M = I) and train them with the decoder
    int steps = 2000;
    int batch = 32;
    int visionSteps = 0; // while the vision tower trains: freeze it and the merger after this many steps (0: never)
    int saveEvery = 0;   // also write the folder every N steps (0: only at the end)
    double lr = 0;       // 0: 2e-3 from scratch, 1e-3 for fine-tunes
    double weightDecay = 0.01;
    double cellLoss = 1.0; // weight of the vision tower's cell-naming loss (only while vision trains)
    uint64_t seed = 1;
    c10::Device device = c10::kCPU;
    std::function<void(const QString&)> progress;
};

struct TrainResult {
    double firstLoss = 0;                    // mean over the first 10 steps
    double finalLoss = 0, finalAccuracy = 0; // over the last reporting window (up to 50 steps)
    double seconds = 0;
    int64_t parameters = 0, trainable = 0;
};

// Trains a tiny Qwen2-VL on the synthetic task with LibTorch autograd (AdamW, warmup then cosine decay,
// gradient clipping), feeding the same vision tower, decoder and PositionTables as inference, and writes
// a loadable model folder with f16 weights.
TrainResult train(const TrainOptions& options);

} // namespace ropescope::model
