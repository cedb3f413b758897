#pragma once
// What `check-positions` and batch `check-positions` items share: the rule from --family / --model, and a
// differing sample's figure.
#include "core/model/analysis/position_check.h"
#include "views/charts/chart_export.h"

#include <QCommandLineParser>
#include <QByteArray>
#include <QString>

namespace ropescope::cli {

void addPositionRuleOptions(QCommandLineParser& parser); // --family, --model
// The family's rule from --family or --model. Throws UsageError.
model::PositionRule positionRuleFrom(const QCommandLineParser& parser);
// A differing sample kept with its positions (checkDump's keepPositionsFor): got beside expected.
QByteArray positionCheckFigure(const model::SampleCheck& check, views::FigureFormat format);

} // namespace ropescope::cli
