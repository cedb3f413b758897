#pragma once
// One `attend` run as the CLI and batch jobs do it: options, the model kept loaded between runs, and the
// files a run produces. LibTorch inside: include only from the commands that run a model.
#include "charts/attention_heatmap.h"
#include "geometry_options.h"
#include "model/tokenizer.h"
#include "model/vlm.h"

#include <QCommandLineParser>
#include <QImage>
#include <QJsonObject>

#include <memory>
#include <optional>

namespace ropescope::cli {

void addAttendOptions(QCommandLineParser& parser); // model, image, question, capture and heatmap flags, device

struct AttendOptions {
    QString modelDir, imagePath, question;
    QString captureLayers, head;   // as given; checked against the model once it is loaded
    std::optional<int> heatmapLayer;
    int maxNewTokens = 0;          // 0: the model's default (32 with a chat template, else 1)
    std::optional<int64_t> maxPixels;
    bool difference = false;       // also run the model's own scheme: where attention moved, and how much
    views::HeatmapOptions heat;
    torch::Device device = torch::kCPU;
    torch::Dtype dtype = torch::kFloat32;
};
// Throws UsageError naming the bad flag. Defaults: the bundled mrope model, sample image and question.
AttendOptions parseAttendOptions(const QCommandLineParser& parser);

// A model folder loaded once: batch items on the same model (and image) re-run only the decoder.
struct AttendModel {
    QString dir;
    torch::Device device = torch::kCPU;
    torch::Dtype dtype = torch::kFloat32;
    std::unique_ptr<model::Vlm> vlm;
    std::unique_ptr<model::Tokenizer> tokenizer;
    static std::unique_ptr<AttendModel> load(const QString& dir, torch::Device device, torch::Dtype dtype);
};

struct AttendOutcome {
    QString answer;
    QImage heatmap;           // the overlay; encode with the summary as metadata
    QImage difference;        // own scheme -> this one (with AttendOptions::difference; else null)
    QJsonObject summary;      // answer, scheme, layout, per-layer image mass, entropy, centre of mass
    std::vector<torch::Tensor> attention; // per captured layer [heads, query tokens, image tokens]
    std::vector<int64_t> layers, queryTokens, imageTokens, ids;
    geometry::PositionTable positions;    // the first layer's

    QByteArray tensorFile() const;        // attention.safetensors
    QByteArray positionsCsv() const;
};
AttendOutcome runAttendOnce(AttendModel& model, const AttendOptions& options, const SchemeRequest& scheme);

} // namespace ropescope::cli
