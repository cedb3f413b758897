#pragma once
// The Attention tab's state behind AttentionPanel (its d-pointer), shared by the panel's .cpp files.
#include "app/gui/attention/attention_job.h"
#include "app/gui/attention_panel.h"
#include "core/session/explorer_state.h"

#include <QElapsedTimer>
#include <QImage>
#include <QString>

#include <algorithm>
#include <memory>
#include <optional>
#include <vector>

namespace ropescope::gui {

inline double seconds(const QElapsedTimer& clock)
{
    return clock.isValid() ? static_cast<double>(clock.elapsed()) / 1000.0 : 0.0;
}

// "45 ms" below a second ("0.0 s" said nothing of a bundled model's answer), "1.3 s" from one up (issue 72 item 9).
inline QString durationText(double seconds)
{
    return seconds < 0.95 ? QString("%1 ms").arg(std::max(1, static_cast<int>(seconds * 1000 + 0.5)))
                          : QString("%1 s").arg(seconds, 0, 'f', 1);
}

// One image of the prompt, as the user opened it.
struct PromptImageFile {
    QString path;
    QImage image;
};

struct AttentionPanel::Impl {
    std::shared_ptr<const AttentionModel> model;
    std::vector<PromptImageFile> images; // the prompt's images, in order (Image... starts again, + Image... adds)
    session::ExplorerState scheme;
    std::vector<int> attentionLayers{0};            // the model's layers the layer slider steps through
    std::shared_ptr<const model::AttentionRun> run; // the shown run: every layer, answer tokens' rows included
    QString answeredQuestion;                       // the question the shown answer answers (marked stale once edited)
    // The shown run's status line ("answered in 45 ms", its scheme and layout): what the side column's status returns to
    // after a progress line or an error, and what every export records as its run (issue 72 item 5).
    QString runStatus;
    std::shared_ptr<const AttentionModel> runModel; // the model that made it (its rotary settings for the own prior)
    int token = -1;                                 // the map's token: -1 for all question tokens, else into mapTokens()
    double priorCorrelation = 0;                    // of the own prior shown
    std::optional<model::Relevancy> relevancy;      // of the shown run, when the map type asked for it
    bool staleWhileHidden = false;
    bool engaged = false;                                           // the tab has run once: scheme changes re-run it from then on
    bool runAfterLoad = true;                                       // false while a session restores its model: nothing runs until asked
    std::optional<int> restoredLayer, restoredHead;                 // a session's choices, applied once its model is in
    std::optional<std::vector<model::SchemeEntry>> restoredSchemes; // a session's side-by-side list, likewise
    // What finished and how long it took, for the status line (issue 56 item 9): the load and the run under way.
    QElapsedTimer loadClock, runClock;
    QString loaded; // "loaded glm4v-tiny in 1.2 s", said until the next load

    // The selected token's row among the question rows both schemes' runs keep; none for "all" (-1) and
    // for answer tokens (the own scheme's run is a prefill only).
    std::optional<int64_t> ownRow() const
    {
        if (!run || token < 0 || token >= static_cast<int>(run->questionTokens.size()))
            return std::nullopt; // question tokens come first in mapTokens()
        const std::vector<int64_t>& rows = run->prompt.queryTokens;
        const auto at = std::find(rows.begin(), rows.end(), run->questionTokens[static_cast<size_t>(token)].index);
        return at == rows.end() ? std::nullopt : std::optional<int64_t>(at - rows.begin());
    }
    std::vector<model::MapToken> mapTokens() const { return run->mapTokens(); }
};

} // namespace ropescope::gui
