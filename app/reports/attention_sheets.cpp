#include "app/reports/attention_sheets.h"

#include "app/reports/map_pictures.h"

#include <algorithm>

namespace ropescope::reports {

QString visibleToken(const QString& text)
{
    QString t = text;
    t.replace('\n', "\\n").replace('\t', "\\t");
    return t.isEmpty() ? QString("''") : "'" + t + "'";
}

std::vector<model::MapToken> sheetTokens(const model::AttentionRun& run)
{
    std::vector<model::MapToken> tokens = run.mapTokens();
    if (tokens.size() > kMaxSheetMaps)
        tokens.resize(kMaxSheetMaps);
    return tokens;
}

int sheetCellWidth(const model::AttentionRequest& prompt)
{
    const int images = static_cast<int>(prompt.images.size());
    return std::clamp(views::stripSize(mapPictures(prompt.images)).width(), 120, 220 * images);
}

views::MapSheet tokenSheet(const model::AttentionRun& run, size_t heatIndex, const model::HeadChoice& head,
                           const views::HeatmapOptions& heat, const QString& schemeTitle)
{
    views::MapSheet sheet;
    sheet.title = QString("text -> image attention per token, layer %1, %2 - %3")
                      .arg(run.layers[heatIndex])
                      .arg(head.kind == model::HeadChoice::Kind::Index     ? "head " + QString::number(head.index)
                               : head.kind == model::HeadChoice::Kind::Max ? "max over heads"
                                                                           : "mean over heads",
                           schemeTitle);
    for (const model::MapToken& t : sheetTokens(run)) {
        const at::Tensor rows = run.tokenAttention(heatIndex, t);
        const double mass = rows.to(c10::kDouble).sum(-1).mean().item<double>();
        sheet.maps.push_back({views::attentionOverlay(mapPictures(run.prompt.images), model::headMap(rows, head), heat),
                              {QString("%1 %2").arg(t.answer ? "answer" : "#" + QString::number(t.index), visibleToken(t.text)),
                               QString("image mass %1").arg(mass, 0, 'f', 3)}});
    }
    return sheet;
}

} // namespace ropescope::reports
