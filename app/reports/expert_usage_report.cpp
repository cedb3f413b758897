#include "app/reports/expert_usage_report.h"

#include <QJsonArray>
#include <QString>

#include <algorithm>

namespace ropescope::reports {

QByteArray expertUsageCsv(const model::ExpertUsage& u)
{
    QByteArray csv = "layer,expert,image_share,text_share,image_mean_weight,text_mean_weight\n";
    for (size_t k = 0; k < u.layers.size(); ++k)
        for (size_t e = 0; e < static_cast<size_t>(u.experts); ++e)
            csv += QString("%1,%2,%3,%4,%5,%6\n")
                       .arg(u.layers[k])
                       .arg(e)
                       .arg(u.imageShare[k][e], 0, 'g', 9)
                       .arg(u.textShare[k][e], 0, 'g', 9)
                       .arg(u.imageWeight[k][e], 0, 'g', 9)
                       .arg(u.textWeight[k][e], 0, 'g', 9)
                       .toUtf8();
    return csv;
}

double imageTextOverlap(const model::ExpertUsage& u, size_t k)
{
    if (u.topK <= 0 || u.imageTokens == 0 || u.textTokens == 0)
        return 0.0;
    double common = 0;
    for (size_t e = 0; e < static_cast<size_t>(u.experts); ++e)
        common += std::min(u.imageShare[k][e], u.textShare[k][e]);
    return common / u.topK;
}

QJsonObject expertUsageJson(const model::ExpertUsage& u)
{
    auto array = [](const std::vector<double>& v) {
        QJsonArray a;
        for (double x : v)
            a.append(x);
        return a;
    };
    QJsonArray layers;
    for (size_t k = 0; k < u.layers.size(); ++k)
        layers.append(QJsonObject{{"layer", u.layers[k]},
                                  {"image_share", array(u.imageShare[k])},
                                  {"text_share", array(u.textShare[k])},
                                  {"image_mean_weight", array(u.imageWeight[k])},
                                  {"text_mean_weight", array(u.textWeight[k])},
                                  {"image_text_overlap", imageTextOverlap(u, k)}});
    return QJsonObject{{"experts", u.experts},
                       {"top_k", u.topK},
                       {"image_tokens", static_cast<double>(u.imageTokens)},
                       {"text_tokens", static_cast<double>(u.textTokens)},
                       {"per_layer", layers}};
}

views::ExpertUsageGrid expertUsageGrid(const model::ExpertUsage& u, const QString& title)
{
    views::ExpertUsageGrid g;
    g.title = title;
    g.layers = u.layers;
    g.experts = u.experts;
    g.image = u.imageShare;
    g.text = u.textShare;
    return g;
}

} // namespace ropescope::reports
