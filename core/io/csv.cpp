#include "core/io/csv.h"

namespace ropescope::io {

QString csvField(QString text)
{
    return '"' + text.replace('"', "\"\"") + '"';
}

} // namespace ropescope::io
