#pragma once
// The state of a positional-bias measurement (bias_state.json): fixed-point sums per scheme, layer and map,
// each sample's statistics, and the settings shards must share to merge. Read from files that come from
// anywhere (`bias --merge`), so fromJson checks everything against what a measurement can write before it
// allocates. No LibTorch here: the fuzz build links it (tests/fuzz/fuzz_bias_state.cpp).
#include "core/model/engine/safetensors.h" // ModelError, BadInputFile

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <cstdint>
#include <optional>
#include <vector>

namespace ropescope::model {

enum class BiasMap { Question = 0, Answer = 1 };
constexpr int kBiasMaps = 2;
const char* biasMapName(BiasMap map); // "question", "answer"

// One sample's measurements at one layer for one map kind, on the common grid.
struct BiasSampleStats {
    int64_t sample = 0;                                          // index in the stream (orders merged shards)
    double centreRow = 0, centreCol = 0;                         // centre of mass, in cells
    double firstRow = 0, lastRow = 0, firstCol = 0, lastCol = 0; // mass on the image's first/last row/column
    // Pearson correlation of the map with each image token's 1-D index distance to the first query token
    // (negative: closer tokens get more attention, the decay the seeds describe). On the sample's own grid.
    double distanceCorrelation = 0;
    // VRoPE's boundary measure, as shares of the queries' whole attention (not renormalised over the image):
    // to the image's last visual tokens (its last row), to its first (first row), to the text before it.
    double toLast = 0, toFirst = 0, toTextBefore = 0;
    // Videos: the share of the video's attention on its first / last temporal patch (on the common frame count).
    double firstFrame = 0, lastFrame = 0;
};

// One scheme x layer x map: the sum of the samples' normalised maps in fixed point (value * 2^40, exact
// to ~1e-12 per sample and associative, so merged shards equal one run bit for bit) and every sample's stats.
// For videos the map is the within-frame map (the video's normalised attention summed over its frames), and
// frameSum adds up the mass per temporal patch.
struct BiasCell {
    std::vector<int64_t> mapSum;   // rows * cols, row-major
    std::vector<int64_t> frameSum; // frames (videos only)
    std::vector<BiasSampleStats> samples;
    // With keepSamples only: each sample's map on the common grid (then, for videos, its mass per frame), in
    // the order of `samples`. Memory grows with the samples, which is why it is asked for.
    std::vector<std::vector<double>> sampleMaps;
};
constexpr double kBiasFixedPoint = 1099511627776.0; // 2^40

// What one scheme predicts geometrically for the layout of the stream's first sample, per captured layer.
struct BiasGeometry {
    int64_t sample = -1;             // which sample's layout (the smallest index measured)
    std::vector<double> ptd;         // Circle-RoPE's PTD of the layer's position table
    std::vector<double> priorSpread; // spread of the positional prior from the first query token
};

struct BiasAccumulation {
    // Settings; shards merge only when all of these agree.
    QString model;                      // the model folder's recorded scheme and name, for the record
    QString source;                     // how the samples were drawn (stream, seed, rendering or file)
    QStringList schemes;                // labels, in order ("own" for the model's own scheme)
    std::vector<int> layers;            // captured decoder layers, ascending
    int rows = 0, cols = 0;             // the common grid
    int frames = 0;                     // videos: the common count of temporal patches; 0 for images
    bool keepSamples = false;           // per-sample maps kept (bias_samples.csv)
    int64_t total = 0;                  // samples in the whole stream (over every shard)
    std::vector<BiasCell> cells;        // [scheme][layer][map]
    std::vector<BiasGeometry> geometry; // per scheme

    void reset(); // empty cells and geometry for the settings
    BiasCell& cell(size_t scheme, size_t layer, BiasMap map);
    const BiasCell& cell(size_t scheme, size_t layer, BiasMap map) const;
    int64_t sampleCount() const; // samples measured (from the first cell)

    // Adds another shard; throws ModelError naming the setting that differs, or a sample measured twice.
    void merge(const BiasAccumulation& other);
    // The shard file (bias_state.json): sums as decimal strings, so no count of samples loses a bit.
    QJsonObject toJson() const;
    static BiasAccumulation fromJson(const QJsonObject& json, const QString& name); // throws ModelError naming `name`
};

// `folder`/bias_state.json, read bounded and checked (fromJson); throws BadInputFile naming the file.
BiasAccumulation readBiasState(const QString& folder);
// Whether `a` holds exactly shard `shard` of `shards` of its stream: every sample k < total with
// k mod shards = shard, and no other (the state of a finished `bias --shard shard/shards`).
bool holdsShard(const BiasAccumulation& a, int shard, int shards);
// `folder`'s state when it holds exactly that shard; none for a missing, unreadable, foreign or partial one.
std::optional<BiasAccumulation> completeShardState(const QString& folder, int shard, int shards);
bool folderHoldsShard(const QString& folder, int shard, int shards); // completeShardState has a value

} // namespace ropescope::model
