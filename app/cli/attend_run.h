#pragma once
// One `attend` run as the CLI and batch jobs do it: options, the model kept loaded between runs, and the
// files a run produces. LibTorch inside: include only from the commands that run a model.
#include "app/cli/geometry_options.h"
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/expert_usage.h"
#include "core/model/analysis/own_prior.h"
#include "core/model/analysis/region_attention.h"
#include "core/model/analysis/relevancy.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "views/charts/attention_figures.h"
#include "views/charts/attention_heatmap.h"
#include "views/charts/chart_export.h"
#include "views/charts/mask_chart.h"

#include <QCommandLineParser>
#include <QImage>
#include <QJsonObject>

#include <memory>
#include <optional>

namespace ropescope::cli {

void addAttentionOptions(QCommandLineParser& parser); // model, image, question, capture and heatmap flags, device

struct AttentionOptions {
    QString modelDir, question;
    QStringList imagePaths;      // one or more (--image repeated): the prompt's images in order, a map on each
    QString captureLayers, head; // as given; checked against the model once it is loaded
    std::optional<int> heatmapLayer;
    int maxNewTokens = 0; // 0: the model's default (32 with a chat template, else 1)
    std::optional<int64_t> maxPixels;
    bool difference = false;                 // also run the model's own scheme: where attention moved, and how much
    bool perToken = false;                   // a map for every question and answer token
    bool layersHeads = false;                // every captured layer x head: small multiples and a table
    bool ownPrior = false;                   // the model's own positional prior per layer and head
    std::optional<model::CellRegion> region; // image region -> text: which tokens attend these cells
    bool relevancy = false;                  // gradient relevancy of the answer's first token (Chefer et al. 2021)
    bool expertUsage = false;                // MoE models: where image and text tokens are routed
    bool masks = false;                      // every kind of layer's mask over the whole prompt: masks.png, masks.json
    QStringList schemes;                     // --schemes: entries as written, compared side by side
    views::FigureFormat figureFormat = views::FigureFormat::Png;
    views::HeatmapOptions heat;
    c10::Device device = c10::kCPU;
    c10::ScalarType dtype = c10::kFloat;

    QString figureName(const QString& stem) const; // stem + .png, .svg or .pdf
};
// Throws UsageError naming the bad flag. Defaults: the bundled mrope model, sample image and question.
AttentionOptions parseAttentionOptions(const QCommandLineParser& parser);

// A model folder loaded once: batch items on the same model (and image) re-run only the decoder.
// --capture-layers: "all" (or empty: returns none, meaning every attention layer) or a comma list of layers
// 0..layers-1; throws UsageError naming a bad one.
std::vector<int> parseLayerList(const QString& text, int layers);

// A model folder read once (model::ModelBundle), on the device and in the dtype of the flags.
struct ModelOnDevice : model::ModelBundle {
    c10::Device device = c10::kCPU;
    c10::ScalarType dtype = c10::kFloat;
    static std::unique_ptr<ModelOnDevice> load(const QString& dir, c10::Device device, c10::ScalarType dtype);
};

struct AttentionOutcome {
    model::AttentionRun run;
    QString answer;
    QImage heatmap;       // the overlay
    QImage heatmapFigure; // heatmap.png: the overlay with its colour bar and caption (as the window exports it)
    QImage difference;    // own scheme -> this one (with AttentionOptions::difference; else null)
    QJsonObject summary;  // answer, scheme, layout, per-layer image mass, entropy, centre of mass, sinks
    size_t heatIndex = 0; // the heatmap's layer among the captured ones
    model::HeadChoice head;
    views::HeatmapOptions heat;
    // --own-prior: for ownPriorToken, every captured layer's heads in order (layer-major).
    model::MapToken ownPriorToken;
    std::vector<model::OwnPrior> ownPriors;
    std::optional<model::RegionAttention> region; // --region
    std::optional<model::CellRegion> regionCells; // as asked
    std::optional<model::Relevancy> relevancy;    // --relevancy
    QImage relevancyMap;                          // its overlay on the image
    model::ExpertUsage experts;                   // MoE models: routing of the prompt's image and text tokens
    views::MaskChart maskChart;                   // --masks: each kind of layer's mask over the whole prompt
    QJsonObject masksJson;                        // --masks: the same as numbers

    QByteArray tensorFile() const;                           // attention.safetensors (answer tokens' rows too, with --per-token)
    QByteArray positionsCsv() const;                         // the first layer's positions
    QByteArray tokenSheet(views::FigureFormat format) const; // --per-token: every token's map at the heatmap layer
    QByteArray tokensJson() const;
    QByteArray layersHeadsFigure(views::FigureFormat format) const; // --layers-heads
    QByteArray layersHeadsCsv() const;
    QByteArray ownPriorFigure(views::FigureFormat format) const; // --own-prior: prior | attention per head, heatmap layer
    QByteArray ownPriorCsv() const;
    QByteArray regionFigure(views::FigureFormat format) const; // --region: the region, layers x tokens, the heatmap layer's bars
    QByteArray regionCsv() const;
    QByteArray expertUsageFigure(views::FigureFormat format) const; // --expert-usage
    QByteArray expertUsageCsv() const;
    QByteArray expertUsageJson() const;
    QByteArray masksFigure(views::FigureFormat format) const; // --masks
};
AttentionOutcome runAttentionOnce(ModelOnDevice& model, const AttentionOptions& options, const model::ModelScheme& scheme);
// The scheme flags as a model record would hold them (AGE as its per-layer pattern).
model::ModelScheme modelScheme(const SchemeRequest& request);

// Shared by single runs and scheme comparisons; each throws UsageError naming the flag.
model::AttentionQuery attentionQuery(const ModelOnDevice& model, const AttentionOptions& options);
int heatmapLayer(const AttentionOptions& options, const std::vector<int>& captured);
model::HeadChoice headChoice(const AttentionOptions& options, int heads);

} // namespace ropescope::cli
