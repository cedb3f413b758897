#pragma once
// One prompt under several position schemes, side by side: each scheme's answer, its map at one layer,
// the geometry it gives this prompt's layout (PTD, positional-prior spread) and where its attention went
// relative to the first scheme's. The view the Circle-RoPE question asks for: attention and PTD per scheme.
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/attention_stats.h"

#include <QStringList>

#include <functional>

namespace ropescope::model {

struct SchemeRow {
    SchemeEntry entry;
    std::string untrained; // what differs from the model's own scheme; empty when nothing
    QString answer;
    std::vector<float> map;          // mean over heads and question tokens at the layer, over every image's cells
    double ptd = 0;                  // of the scheme's position table at the layer (Circle-RoPE eq. 1)
    double priorSpread = 0;          // max - min of the positional prior from the prompt's last token over the image
    double shift = 0;                // total variation from the first row's map (0 for the first)
    HeadStats stats;                 // mean over heads: image mass, entropy, sinks
    std::vector<double> imageShares; // per image of the prompt: its share of the attention on images (mean over heads)

    QStringList caption() const; // short lines under the row's map in a figure
};

struct SchemeComparison {
    int layer = 0;
    std::vector<PromptImage> images; // as the model saw them
    QString layout;
    std::vector<SchemeRow> rows;
};

constexpr int kMaxComparedSchemes = 6;

// Runs `query` under each scheme in turn (the image's vision is encoded once). `progress(done, total)`
// is called before each run and at the end; returning false stops early with the rows done so far.
// `first`, when given, is the run of schemes[0] already made (capturing `layer`): it is not run again.
// Throws ModelError for more than kMaxComparedSchemes schemes, a layer that is not captured, or a scheme the
// model cannot run (naming its label).
SchemeComparison compareSchemes(const ModelBundle& model, AttentionQuery query, const std::vector<SchemeEntry>& schemes, int layer,
                                const std::function<bool(int, int)>& progress = {}, const AttentionRun* first = nullptr);

} // namespace ropescope::model
