#pragma once
#include "app/gui/attention/attention_choices.h"
#include "core/session/explorer_state.h"
#include "views/charts/attention_heatmap.h"

#include <QImage>
#include <QJsonArray>
#include <QJsonObject>
#include <QWidget>

#include <memory>
#include <vector>

class QTabWidget;

namespace ropescope::gui {

class AttentionControls;
class AttentionRunner;
class LayerHeadsPage;
class MapPage;
class RegionPage;
class SchemesPage;
struct AttentionJob;
struct AttentionModel;

// The attention tab: an image and a question through a VLM under the explorer's current scheme; the
// answer, and the text->image attention of any layer and head as a heatmap over the image (Circle-RoPE
// sec. 5.6 recipe). Starts on the bundled mrope model and sample image. The model runs on demand; layer,
// head, colormap, opacity and contrast only repaint. The model runs on a worker thread so the window
// stays live while a large checkpoint thinks; with "explorer's scheme" on, every scheme tweak re-runs the
// decoder (the image's vision embeddings are cached) and the newest request wins. (LibTorch stays in the .cpp.)
class AttentionPanel : public QWidget {
    Q_OBJECT
public:
    explicit AttentionPanel(QWidget* parent = nullptr);
    ~AttentionPanel() override;

    void setScheme(const session::ExplorerState& state); // re-runs (in the background) when it drives the model
    void useExplorerScheme(bool on);                     // off: the scheme the model was trained with
    void compareWithOwnScheme(bool on);                  // also run the model's own scheme: difference map
    bool run();                                          // blocking (scripts, tests); false and a message on failure
    void requestRun();                                   // in the background; emits runFinished
    bool busy() const;
    bool setModel(const QString& dir);  // blocking; on failure the current model stays
    void openModel(const QString& dir); // loads on a worker, then runs; emits runFinished
    bool setImage(const QString& path); // the prompt's only image (further images are dropped)
    // A further image of the prompt (up to model::kMaxPromptImages): maps are drawn on each image side by
    // side on one colour scale, with each image's share of the attention beside them.
    bool addImage(const QString& path);
    int imageCount() const;
    void setQuestion(const QString& question);

    QString answer() const;
    QString status() const;
    QImage overlay() const { return overlay_; }
    QImage ownOverlay() const { return ownOverlay_; }        // null unless comparing
    QImage differenceOverlay() const { return difference_; } // null unless comparing
    double shift() const;                                    // at the shown layer; 0 unless comparing
    // "Map type": the attention, or the model's own positional prior of the map's token (with its
    // correlation to that token's attention, shown beside the map).
    void showOwnPrior(bool on);
    double priorCorrelation() const;
    // Writes the shown heatmap as PNG (the run's parameters in its "ropescope" text chunk); when comparing,
    // also <name>_own.png and <name>_difference.png beside it. Returns the paths written; throws
    // std::runtime_error naming the problem (nothing run yet, a path that cannot be written).
    QStringList exportHeatmaps(const QString& path) const;
    // Writes every token's map at the shown layer and head (`attend --per-token`'s sheet) as PNG/SVG/PDF by
    // the extension; throws std::runtime_error as above.
    void exportTokenSheet(const QString& path) const;
    // What every export records of the shown run: model, every image, question, answer, status, layer, head.
    QJsonObject runMetadata() const;
    int layers() const;

    // Per-token maps: -1 shows the mean over the question tokens, i in 0..mapTokenCount()-1 one token
    // (question tokens first, then the answer's).
    void selectToken(int token);
    int mapTokenCount() const;
    // The layers x heads grid's click: that layer and head in the Map tab.
    void openLayerHead(int layer, int head);
    // Schemes side by side: the explorer's current scheme joins the list; requestCompare runs the list
    // on a worker (progress in the status, cancel between schemes) and emits runFinished.
    void addExplorerScheme();
    int comparedSchemes() const;
    std::vector<double> comparedShifts() const; // of the last comparison's rows, from the first's map
    void requestCompare();
    // Image region -> text: the merged-grid cells (corners inclusive) whose attention from every token the
    // "Region -> text" tab charts per layer; dragging on its picture does the same. regionShares() are the
    // shown layer's shares per token (mapTokens order), empty without a region or run.
    void selectRegion(int row0, int col0, int row1, int col1, int image = 0);
    void clearRegion();
    std::vector<double> regionShares() const;
    // The run's prompt in the explorer: its layout under the run's scheme and layer, the strongest question
    // token at the region selected, it and the runner-up tokens and the region's image tokens highlighted.
    void showRegionInExplorer();

    // The tab's inputs and view settings (model folder, image, question, scheme choices, layer, head,
    // colormap, opacity, contrast, smoothing), saved with the explorer's session; applySettings loads
    // a different model in the background without running it.
    QJsonObject settings() const;
    void applySettings(const QJsonObject& settings);

Q_SIGNALS:
    void runFinished(bool ok);
    void settingsChanged();
    void showInExplorer(const session::ExplorerState& state); // showRegionInExplorer's request
    void errorShown(const QString& message);                  // a failure the window shows in its status bar too

protected:
    void showEvent(QShowEvent* event) override;

private:
    void markStaleAnswer();
    void clearRun();       // nothing of the shown run stays: another model, or a run that failed
    void connectExports(); // the views' export buttons (attention_panel_settings.cpp)
    void connectControls();
    void installModel(std::shared_ptr<const AttentionModel> model);
    std::shared_ptr<AttentionJob> prepare();
    bool finish(AttentionJob& job);
    bool fail(const QString& message);
    void setStatus(const QString& text);
    void repaintOverlay();
    void showExpertsView(bool shown); // the Experts tab, after a mixture-of-experts run
    void repaintTokens();
    void showImages();
    bool takeImage(const QString& path, bool further); // the only image, or a further one
    void updateQuestionNote();
    MapType mapType() const;
    size_t shownLayer() const;          // the captured layer shown, clamped to the run's
    int modelLayer() const;             // the model's number of the layer the slider shows
    int sliderIndexOf(int layer) const; // the slider position of a model layer (the last when it has none)
    views::HeatmapOptions heatmapOptions() const;
    struct Impl;
    std::unique_ptr<Impl> d;
    AttentionRunner* runner_;
    QImage overlay_, ownOverlay_, difference_;
    AttentionControls* ui_;
    QTabWidget* views_;
    MapPage* map_;
    LayerHeadsPage* layerHeads_;
    SchemesPage* schemes_;
    RegionPage* region_;
    class ExpertsPage* experts_; // its tab shows only after a mixture-of-experts run
    class BiasView* bias_;
};

} // namespace ropescope::gui
