#pragma once
// Where a bias measurement's samples come from, shared by `ropescope bias`, batch `bias` items and the GUI's
// Bias view: the bundled task's synthetic stream, a question set, a folder of images asked one question, or a
// folder of videos (one sub-folder of frames per video) asked one question. And the rule that picks the
// common grid (and, for videos, the common frame count) the samples' maps are brought to.
#include "core/model/analysis/positional_bias.h"
#include "core/model/training/synthetic_task.h"

#include <QString>
#include <QStringList>

#include <cstdint>
#include <functional>
#include <vector>

namespace ropescope::model {

struct ModelConfig;
struct PreprocessOptions;

struct BiasSampleSource {
    QString description; // recorded, and compared when shards merge
    int64_t total = 0;
    bool video = false;
    std::function<BiasSample(int64_t)> sampleAt;
    std::vector<QStringList> files; // per sample: its image, or its video's frames (empty: the synthetic stream)
};

// The bundled task's held-out stream: samples 0..n-1 of `seed`. With `frames` > 0 each sample is a still video:
// its picture repeated over that many frames, so every temporal patch shows the same thing and any preference
// for a frame comes from the positions alone (the temporal half of the bias).
BiasSampleSource syntheticSamples(int64_t samples, uint64_t seed = 1000003, Rendering rendering = Rendering::OnGrid, int frames = 0);
// A question set (questions.jsonl, as `eval --questions` reads it). Throws ModelError naming the file.
BiasSampleSource questionSetSamples(const QString& path);
// Every image file in `folder` (name order), each asked `question`. Throws ModelError for a missing or empty folder.
BiasSampleSource imageFolderSamples(const QString& folder, const QString& question);
// Every sub-folder of `folder` holding image files (name order) is one video, its images the frames in name
// order (taken as sampled at 2 frames per second). Throws ModelError for a missing folder, no videos, or a video
// over kMaxVideoFrames frames.
BiasSampleSource videoFolderSamples(const QString& folder, const QString& question);

// The common grid: the most common merged grid among the samples (ties: the first sample's), computed from the
// image sizes alone (a video's from its first frame); for videos also the most common count of temporal
// patches. Throws ModelError naming an unreadable image.
struct CommonShape {
    int rows = 0, cols = 0, frames = 0;
};
CommonShape commonShape(const BiasSampleSource& source, const ModelConfig& config, const PreprocessOptions& options);

// A request's samples, grid and frame count from a source (the grid from commonShape unless rows/cols are
// given, > 0).
void useSamples(BiasRequest& request, const BiasSampleSource& source, const CommonShape& shape);

// The bundled task's held-out stream as a request's samples: indices 0..samples-1 of `seed`, the task's 8x8 grid
// as the common one.
void useSyntheticSamples(BiasRequest& request, int64_t samples, uint64_t seed = 1000003);

} // namespace ropescope::model
