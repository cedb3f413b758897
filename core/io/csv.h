#pragma once
#include <QString>

namespace ropescope::io {

// One CSV field holding free text (token text, answers, labels): always quoted, inner quotes doubled, so
// commas, quotes and line breaks in the text stay inside the field (RFC 4180).
QString csvField(QString text);

} // namespace ropescope::io
