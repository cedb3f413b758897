#pragma once
// Positional bias over many samples: the empirical half of the seeds' claims (VRoPE's Fig. 2 averages
// text -> image attention over a benchmark; its Table 1 measures attention at the visual-text boundary;
// Circle-RoPE argues that where an image token sits should not decide how strongly text attends to it).
// Each sample's map is normalised over its image and added up per scheme, layer and map kind (the
// question tokens' mean map, and the map of the step that produces the first answer token, i.e. the
// prompt's last row). The state is additive: shards of a sample stream merge into exactly the sums one run
// makes (fixed-point sums), so a job array can split the work.
#include "core/model/analysis/bias_state.h"
#include "core/model/engine/model_bundle.h"
#include "core/model/engine/model_scheme.h"

#include <QImage>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace ropescope::model {

// A value with its 95% bootstrap interval over samples.
struct Estimate {
    double value = 0, low = 0, high = 0;
};

// What the figure, the table and the JSON report for one cell.
struct BiasSummary {
    int samples = 0;
    std::vector<double> meanMap;                // rows * cols, sums to 1
    std::vector<double> rowProfile, colProfile; // mass per row / per column of the mean map
    Estimate centreRow, centreCol;              // of the mean map (= the mean of the samples' centres)
    Estimate rowOffset, colOffset;              // centre minus the grid's centre ((rows - 1) / 2, (cols - 1) / 2)
    Estimate lastVsFirstRow, lastVsFirstCol;    // mean mass on the last row / on the first (likewise columns)
    Estimate distanceCorrelation;               // mean over samples
    Estimate toLast, toFirst, toTextBefore;     // means over samples
    std::vector<double> frameProfile;           // videos: mean mass per temporal patch (sums to 1)
    Estimate lastVsFirstFrame;                  // videos: mean mass on the last temporal patch / on the first
};
// Bootstrap: `resamples` resamplings of the samples (sorted by index) with a fixed seed, percentile interval.
BiasSummary summarize(const BiasCell& cell, int rows, int cols, int resamples = 1000);

// One sample of a stream: an image, or a video's frames in order (at 2 frames per second), and its question.
struct BiasSample {
    std::vector<QImage> frames; // one image, or the video's frames
    bool video = false;
    QString question;
};

struct BiasRequest {
    std::vector<std::optional<ModelScheme>> schemes; // nullopt: the model's own
    QStringList labels;                              // one per scheme; the model's own (nullopt) is labelled by measureBias
    std::vector<int> layers;                         // empty: every layer
    int rows = 0, cols = 0;                          // the common grid (the caller's rule)
    int frames = 0;                                  // videos: the common count of temporal patches; 0: images
    bool keepSamples = false;                        // keep every sample's map (memory grows with the samples)
    std::vector<int64_t> indices;                    // the stream's samples this run (or shard) measures
    // Returns sample `index`; throws ModelError naming an unreadable one.
    std::function<BiasSample(int64_t index)> sampleAt;
    std::function<void(int64_t done, int64_t total)> progress;
    std::function<bool()> cancelled; // polled between samples
};

// Labels the model's own scheme "own (<its scheme> [+ HARoPE])" and
// sets BiasAccumulation::model to "<folder>, trained with <its scheme>" (source and total are the caller's).
// Runs every sample under every scheme (prefill only, the query rows against every earlier column) and
// accumulates. Throws ModelError for an empty stream, a layer the model does not have, a bad sample.
BiasAccumulation measureBias(const ModelBundle& model, const BiasRequest& request);

// Videos: each sample's mass per temporal patch is brought to the common frame count the same way (a 1 x n grid).
// A map on a rows0 x cols0 grid brought to rows x cols: bilinear on cell centres, then renormalised to sum 1
// (the same map when the grids agree). How samples of other grids join the common one.
std::vector<double> resampleMap(const std::vector<double>& map, int rows0, int cols0, int rows, int cols);

} // namespace ropescope::model
