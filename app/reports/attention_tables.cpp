#include "app/reports/attention_tables.h"

#include "core/io/csv.h"
#include "core/model/analysis/attention_stats.h"

#include <torch/types.h>

#include <QString>
#include <QStringList>

namespace ropescope::reports {

QByteArray layersHeadsCsv(const model::AttentionRun& run)
{
    // The layer's mask beside its heads: sliding or full, its window (0: none), and the question x image cells it hid.
    QByteArray csv = "layer,head,image_mass,normalized_entropy,top1_share,border_share,first_token_share,layer_kind,window,hidden_cells\n";
    const model::LayerHeadMaps maps = model::layerHeadMaps(run.attention(), run.prompt.grids());
    for (size_t k = 0; k < run.layers.size(); ++k) {
        const model::MaskKind kind = k < run.layerKinds.size() ? run.layerKinds[k] : model::MaskKind();
        const int64_t hidden =
            k < run.masks.question.size() ? run.masks.question[k].ge(static_cast<int>(model::KeyMask::Window)).sum().item<int64_t>() : 0;
        for (int h = 0; h < maps.heads; ++h) {
            const model::HeadStats& s = maps.stats[k * static_cast<size_t>(maps.heads) + static_cast<size_t>(h)];
            csv += QString("%1,%2,%3,%4,%5,%6,%7,%8,%9,")
                       .arg(run.layers[k])
                       .arg(h)
                       .arg(s.imageMass, 0, 'g', 9)
                       .arg(s.normalizedEntropy, 0, 'g', 9)
                       .arg(s.topShare, 0, 'g', 9)
                       .arg(s.borderShare, 0, 'g', 9)
                       .arg(s.firstShare, 0, 'g', 9)
                       .arg(kind.sliding ? "sliding" : "full")
                       .arg(kind.window)
                       .toUtf8() +
                QByteArray::number(static_cast<qlonglong>(hidden)) + "\n";
        }
    }
    return csv;
}

QByteArray regionCsv(const model::RegionAttention& r)
{
    QByteArray csv = "layer,token,token_text,answer,mass,share\n";
    for (size_t k = 0; k < r.layers.size(); ++k)
        for (size_t t = 0; t < r.tokens.size(); ++t) {
            // The token text is joined, not substituted: a later arg() would replace a "%4" in it.
            csv += (QString("%1,%2,").arg(r.layers[k]).arg(r.tokens[t].index) + io::csvField(r.tokens[t].text) +
                    QString(",%1,%2,%3\n").arg(r.tokens[t].answer ? 1 : 0).arg(r.mass[k][t], 0, 'g', 9).arg(r.share[k][t], 0, 'g', 9))
                       .toUtf8();
        }
    return csv;
}

QByteArray ownPriorCsv(const std::vector<int>& layers, const model::MapToken& token, const std::vector<model::OwnPrior>& priors)
{
    QByteArray csv = "layer,head,token,correlation\n";
    const size_t heads = priors.size() / layers.size();
    for (size_t k = 0; k < layers.size(); ++k)
        for (size_t h = 0; h < heads; ++h)
            csv +=
                QString("%1,%2,%3,%4\n").arg(layers[k]).arg(h).arg(token.index).arg(priors[k * heads + h].correlation, 0, 'g', 9).toUtf8();
    return csv;
}

QByteArray schemesCsv(const model::SchemeComparison& comparison)
{
    QByteArray out =
        "scheme,answer,ptd,prior_spread,shift_from_first,image_mass,normalized_entropy,top1_share,border_share,first_token_share,"
        "image_shares\n"; // image_shares: per image, '/'-separated
    for (const model::SchemeRow& r : comparison.rows) {
        QStringList shares;
        for (double share : r.imageShares)
            shares << QString::number(share, 'g', 9);
        // The free-text fields are joined, not substituted: a later arg() would replace a "%3" in an answer.
        const QString numbers = QString("%1,%2,%3,%4,%5,%6,%7,%8,%9")
                                    .arg(r.ptd, 0, 'g', 9)
                                    .arg(r.priorSpread, 0, 'g', 9)
                                    .arg(r.shift, 0, 'g', 9)
                                    .arg(r.stats.imageMass, 0, 'g', 9)
                                    .arg(r.stats.normalizedEntropy, 0, 'g', 9)
                                    .arg(r.stats.topShare, 0, 'g', 9)
                                    .arg(r.stats.borderShare, 0, 'g', 9)
                                    .arg(r.stats.firstShare, 0, 'g', 9)
                                    .arg(shares.join('/'));
        out += (io::csvField(r.entry.label) + ',' + io::csvField(r.answer) + ',' + numbers + '\n').toUtf8();
    }
    return out;
}

} // namespace ropescope::reports
