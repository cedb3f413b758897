#pragma once
#include "core/geometry/scheme.h"

#include <string>
#include <vector>

namespace ropescope::geometry {

// One row per placement parameter of the built-in schemes: the only place its key, flag, words, range and the
// schemes that read it are written. Validation, the PTD cache key (placement parameters), the model's "trained
// with" check, the CLI's flags and help, the window's words and the panel's enable rules all read this table
// (docs/ARCHITECTURE.md, "Add a scheme parameter"). Rotary settings (theta, head_dim, allocation, ...) are the
// rotary box's, not a scheme's, and are not rows.
struct SchemeParameter {
    // Number: one value with get/set; Other: a vector, choice or flag, parsed and stored by its own code, but
    // still named, compared and reset here.
    enum class Type { Number, Other };

    const char* key;       // JSON, session and batch key ("alpha", "ntk_alpha")
    const char* flag;      // CLI flag without "--" ("ntk-alpha")
    const char* label;     // the window's words ("XD-RoPE NTK alpha")
    const char* help;      // CLI help for Number rows (Other rows keep their own, with their syntax)
    const char* valueName; // the help's placeholder ("--alpha <A>")
    Type type;
    double defaultValue; // Number rows: SchemeParams{}'s value
    double min, max;     // Number rows: the valid range (openMin: min itself is not valid)
    bool openMin;
    const char* rangeText; // "must be from 0 to 1e6": what a value outside the range is told
    bool (*reads)(SchemeKind kind);
    double (*get)(const SchemeParams& p);       // Number rows
    void (*set)(SchemeParams& p, double value); // Number rows
    // Every row: is the value the same, and copy it (a default over a value the scheme does not read).
    bool (*equal)(const SchemeParams& a, const SchemeParams& b);
    void (*copy)(SchemeParams& to, const SchemeParams& from);
    // Number rows: whether a session file holds the value (nullptr: always). An unset optional is left out, and
    // so is a value only one scheme reads, so files of other schemes stay as they were.
    bool (*written)(const SchemeParams& p) = nullptr;
};

const std::vector<SchemeParameter>& schemeParameters();
// Adds a row after the built-in ones. For tests: a parameter the struct does not have (its get and set keep
// the value elsewhere) shows that the CLI, the codec and the panel read the table. Call before anything
// reads the table.
void appendSchemeParameter(const SchemeParameter& row);
// The row with this key, or nullptr.
const SchemeParameter* findSchemeParameter(const std::string& key);
// Whether a built-in scheme reads the parameter with this key (false for an unknown key).
bool schemeReads(SchemeKind kind, const std::string& key);

// Throws InvalidInput naming the first Number row whose value is outside its range.
void validateParameterRanges(const SchemeParams& params);
// The parameters that change where the scheme places tokens: every row the scheme does not read set to its
// default (what the PTD cache and "is this the same scheme" compare).
SchemeParams placementParams(SchemeParams params);

} // namespace ropescope::geometry
