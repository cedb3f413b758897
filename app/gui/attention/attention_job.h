#pragma once
// One run of the Attention tab: its inputs built on the UI thread, the model's result or error filled by the
// worker. Private to the tab's .cpp files (LibTorch stays out of widely included headers).
#include "core/model/analysis/attention_run.h"
#include "core/model/analysis/relevancy.h"
#include "core/model/analysis/scheme_comparison.h"

#include <QString>

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace ropescope::gui {

// A model folder read once (model::ModelBundle), or why it did not load. Shared: a model replaced mid-run
// lives until its run ends.
struct AttentionModel : model::ModelBundle {
    QString error; // set when anything in the folder did not load; nothing else is then
    static std::shared_ptr<AttentionModel> load(const QString& dir);
};

struct AttentionJob {
    std::shared_ptr<const AttentionModel> model;
    model::AttentionQuery query;
    std::vector<model::SchemeEntry> schemes; // not empty: compare these side by side instead
    int comparedLayer = 0;
    bool relevancy = false; // also the answer's gradient relevancy (a backward pass over the prompt)
    quint64 generation = 0;
    QString schemeText;
    std::function<void(int, int)> progress; // called on the worker
    std::atomic<bool> cancelled{false};
    // Filled by the worker.
    std::optional<model::AttentionRun> run;
    std::optional<model::SchemeComparison> comparison;
    std::optional<model::Relevancy> relevancyOf;
    QString error;

    void execute();
};

} // namespace ropescope::gui
