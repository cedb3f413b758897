#pragma once
// Position tables from outside: what `ropescope positions` writes (CSV, JSON), a NumPy .npy array, or a
// .safetensors file with `position_ids` as transformers returns them ([3,1,L], [3,L], [4,1,L]). Read as a
// custom scheme whose positions are fixed: a layout (or a prompt) of the same token count gets them.
#include "core/geometry/custom_scheme.h"

#include <QByteArray>

#include <memory>
#include <optional>
#include <string>

namespace ropescope::user_schemes {

struct PositionFile {
    std::shared_ptr<const geometry::CustomScheme> scheme;
    // The layout the file's own columns describe (CSV and JSON); none for .npy and .safetensors.
    std::optional<geometry::Layout> layout;
};

// Throws geometry::InvalidInput("positions", "<file>: ...") naming what is wrong, io::IoError when the
// file cannot be read. Bounded: at most 512 MB and kMaxLayoutTokens tokens, 1 to 4 components.
PositionFile readPositionFile(const std::string& path);
// The same for bytes in memory; `name` names them in messages, and its extension picks the format.
PositionFile parsePositionFile(const QByteArray& bytes, const std::string& name);

// The reference a SchemeParams holds for a position file.
geometry::CustomSchemeRef positionFileRef(const PositionFile& file);

} // namespace ropescope::user_schemes
