#pragma once
#include "core/geometry/scheme.h"

#include <QByteArray>
#include <QJsonObject>

namespace ropescope::io {

// CSV per the CLI contract: index,modality,segment,frame,row,col,p0,p1,...; frame/row/col empty for text.
// Positions are written in the shortest form that reads back to the same double.
QByteArray positionTableCsv(const geometry::PositionTable& table);

// JSON: scheme, layout, component names, allocation, rotary settings, the given parameters, and one
// record per token (frame/row/col null for text).
QByteArray positionTableJson(const geometry::PositionTable& table, const QJsonObject& parameters);

// The parameters that shaped a table (those its scheme reads, named as in io/scheme_codec.h, and the
// allocation as it applied), for exports and manifests to record.
QJsonObject schemeParamsJson(const geometry::SchemeParams& params);

// Shortest round-trip decimal form of a double ("3", "0.1", "-2.5e-07"); -0 is written as 0.
QByteArray formatNumber(double value);

} // namespace ropescope::io
