#include "core/model/analysis/scheme_comparison.h"

#include "core/geometry/errors.h"
#include "core/geometry/metrics.h"
#include "core/model/engine/safetensors.h"

namespace ropescope::model {

QStringList SchemeRow::caption() const
{
    auto percent = [](double share) { return QString::number(100.0 * share, 'f', 1) + "%"; };
    QStringList lines{entry.label + (untrained.empty() ? QString() : " *"),
                      "answer: " + (answer.isEmpty() ? QString("(empty)") : answer),
                      QString("PTD %1").arg(ptd, 0, 'f', 3),
                      QString("prior spread %1").arg(priorSpread, 0, 'f', 2),
                      QString("shift from first %1").arg(shift, 0, 'f', 3),
                      "top-1% patches " + percent(stats.topShare),
                      "border " + percent(stats.borderShare) + ", first " + percent(stats.firstShare)};
    if (imageShares.size() > 1) { // where a scheme's positions pull attention between images
        QStringList shares;
        for (double share : imageShares)
            shares << percent(share);
        lines << "images " + shares.join(" / ");
    }
    return lines;
}

SchemeComparison compareSchemes(const ModelBundle& model, AttentionQuery query, const std::vector<SchemeEntry>& schemes, int layer,
                                const std::function<bool(int, int)>& progress, const AttentionRun* first)
{
    if (schemes.empty() || schemes.size() > static_cast<size_t>(kMaxComparedSchemes))
        throw ModelError("compare 1 to " + std::to_string(kMaxComparedSchemes) + " schemes, not " + std::to_string(schemes.size()));
    const int total = static_cast<int>(schemes.size());
    if (layer < 0 || layer >= model.vlm->config().text.layers)
        throw ModelError("layer " + std::to_string(layer) + " is not a layer of the model (0.." +
                         std::to_string(model.vlm->config().text.layers - 1) + ")");
    query.layers = {layer}; // one layer is all a row shows: the others are not kept
    query.answerMaps = false;
    query.compareOwn = false;
    SchemeComparison out;
    out.layer = layer;
    at::Tensor firstProbs; // the reference of every row's shift
    for (const SchemeEntry& entry : schemes) {
        if (progress && !progress(static_cast<int>(out.rows.size()), total))
            return out;
        query.scheme = entry.scheme;
        AttentionRun run;
        try {
            run = out.rows.empty() && first ? *first : runAttention(model, query);
        } catch (const std::exception& e) {
            throw ModelError(entry.label.toStdString() + ": " + e.what());
        }
        const at::Tensor probs = run.attention().at(run.captured(layer));
        SchemeRow row;
        row.entry = entry;
        row.untrained = run.untrained;
        row.answer = run.answer;
        row.map = headMap(probs, HeadChoice{});
        row.stats = meanOverHeads(headStats(probs, run.prompt.grids()));
        row.imageShares = imageShares(probs, run.prompt.grids());
        const geometry::PositionTable& table = run.result.layerTables.at(static_cast<size_t>(layer));
        try {
            row.ptd = geometry::computePtd(table).mean;
            row.priorSpread = geometry::positionalPrior(table, static_cast<int>(run.prompt.ids.size()) - 1).spread;
        } catch (const geometry::InvalidInput& e) {
            throw ModelError(entry.label.toStdString() + ": " + e.what());
        }
        if (out.rows.empty()) {
            firstProbs = probs;
            out.images = run.prompt.images;
            out.layout = QString::fromStdString(run.result.layout.toString());
        }
        row.shift = attentionShift(firstProbs, probs);
        out.rows.push_back(std::move(row));
    }
    if (progress)
        progress(total, total);
    return out;
}

} // namespace ropescope::model
