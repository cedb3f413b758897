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

model::ModelConfig positionRuleFrom(const QCommandLineParser& parser, QString* family)
{
    if (parser.isSet("family") == parser.isSet("model"))
        throw UsageError("give the family's rule with --family " + model::familyNames().replace(", ", "|").toStdString() + " or --model DIR");
    if (parser.isSet("family")) {
        const QString name = parser.value("family");
        if (name == "glm-v" || name == "paddleocr-vl")
            throw UsageError("--family " + name.toStdString() + ": its rule comes with its engine (issues 42 and 46); the families checked now are " +
                             model::familyNames().toStdString());
        const auto a = model::familyFromName(name);
        if (!a)
            throw UsageError("--family: expected one of " + model::familyNames().toStdString() + ", got '" + name.toStdString() + "'");
        *family = name;
        return model::familyConfig(*a);
    }
    const model::ModelConfig config = runModelCommand([&] { return model::loadModelConfig(QDir(parser.value("model")).filePath("config.json")); });
    *family = model::familyName(config.architecture);
    return config;
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
