#include "app/cli/check_positions_report.h"

#include "app/cli/cli_error.h"
#include "app/cli/model_options.h"
#include "views/charts/position_diff_chart.h"

#include <QDir>
#include <QFileInfo>

namespace ropescope::cli {

void addPositionRuleOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"family", "The rule to check against: " + model::familyNames() + ".", "F"},
        {"model", "Or read the family (and its token ids) from a model folder's config.json.", "DIR"},
    });
}

model::PositionRule positionRuleFrom(const QCommandLineParser& parser)
{
    if (parser.isSet("family") == parser.isSet("model"))
        throw UsageError("give the family's rule with --family " + model::familyNames().replace(", ", "|").toStdString() +
                         " or --model DIR");
    if (parser.isSet("family")) {
        const auto rule = model::ruleForFamily(parser.value("family"));
        if (!rule)
            throw UsageError("--family: expected one of " + model::familyNames().toStdString() + ", got '" +
                             parser.value("family").toStdString() + "'");
        return *rule;
    }
    return runModelCommand([&] { return model::ruleForModel(parser.value("model")); });
}

QByteArray positionCheckFigure(const model::SampleCheck& c, views::FigureFormat format)
{
    views::PositionDiffChart chart;
    chart.title = QString("%1 row %2: %3 (%4)").arg(QFileInfo(c.batch).fileName()).arg(c.row).arg(model::faultKindName(c.kind), c.detail);
    chart.tokens = c.tokens;
    chart.got = c.gotPositions;
    chart.expected = c.expectedPositions;
    for (const QString& s : c.segments)
        chart.segments << s;
    const auto paint = [&chart](QPainter& p, const QRectF& area) { views::paintPositionDiffChart(p, area, chart); };
    return views::renderFigure(paint, QSize(1600, 900), format, model::sampleCheckJson(c));
}

} // namespace ropescope::cli
