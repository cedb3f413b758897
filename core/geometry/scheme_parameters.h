#pragma once
#include "core/geometry/scheme.h"

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ropescope::geometry {

// One row per placement parameter of the built-in schemes: the only place its key, flag, words, range and the
// schemes that read it are written. Validation, the PTD cache key (placement parameters), the model's "trained
// with" check, the CLI's flags and help, the window's words and the panel's enable rules all read this table
// (docs/ARCHITECTURE.md, "Add a scheme parameter"). Rotary settings (theta, head_dim, allocation, ...) are the
// rotary box's, not a scheme's, and are not rows.
struct SchemeParameter {
    // Number: one value. Choice: one of `choices`, its value the index there (the enum's order). Flag: on or off
    // (1 or 0). Vector: three numbers (getVector / setVector). The codec, the position-table metadata, the CLI
    // and the window's fallback controls handle each type from the row alone.
    enum class Type { Number, Choice, Flag, Vector };

    const char* key;       // JSON, session and batch key ("alpha", "ntk_alpha")
    const char* flag;      // CLI flag without "--" ("ntk-alpha")
    const char* label;     // the window's words ("XD-RoPE NTK alpha")
    const char* help;      // CLI help; empty where the flag is parsed by its own code (--radius sets two rows)
    const char* valueName; // the help's placeholder ("--alpha <A>")
    Type type;
    double defaultValue; // Number rows: SchemeParams{}'s value
    double min, max;     // Number rows: the valid range (openMin: min itself is not valid); Vector rows: each component's
    double sliderMax;    // Number and Vector rows: the top of a slider's usual span (a larger value widens it)
    bool openMin;
    const char* rangeText;                      // "must be from 0 to 1e6": what a value outside the range is told (empty: validate's own)
    bool (*reads)(SchemeKind kind);             // the schemes that read it
    double (*get)(const SchemeParams& p);       // Number; Choice (the index); Flag (1 or 0)
    void (*set)(SchemeParams& p, double value); // the same
    // Every row: is the value the same, and copy it (a default over a value the scheme does not read).
    bool (*equal)(const SchemeParams& a, const SchemeParams& b);
    void (*copy)(SchemeParams& to, const SchemeParams& from);
    // Whether a session file holds the value (nullptr: always). An unset optional is left out, and so is a
    // value only one scheme reads, so files of other schemes stay as they were.
    bool (*written)(const SchemeParams& p) = nullptr;
    // Where a scheme that reads the row still ignores it under another of its settings (nullptr: never), e.g.
    // Qwen2-VL's time index reads no seconds per grid.
    bool (*onlyWhen)(const SchemeParams& p) = nullptr;
    const char* const* choices = nullptr; // Choice: the names, in the enum's order, ending with nullptr
    std::array<double, 3> (*getVector)(const SchemeParams& p) = nullptr;
    void (*setVector)(SchemeParams& p, const std::array<double, 3>& value) = nullptr;
};

const std::vector<SchemeParameter>& schemeParameters();
// Adds a row after the built-in ones. For tests: a parameter the struct does not have (its get and set keep
// the value elsewhere) shows that the CLI, the codec and the panel read the table. Call before anything
// reads the table.
void appendSchemeParameter(const SchemeParameter& row);
// The row with this key, or nullptr.
const SchemeParameter* findSchemeParameter(const std::string& key);
// Whether these parameters' scheme reads the row: its scheme does, and no other setting switches it off (a
// scheme file reads none of the built-ins' parameters).
bool reads(const SchemeParameter& row, const SchemeParams& params);

// A Choice row's name for its value, and the value of a name (nullopt: not one of its choices).
const char* choiceName(const SchemeParameter& row, const SchemeParams& params);
std::optional<double> choiceIndex(const SchemeParameter& row, const std::string& name);
// "fixed, auto or code-auto": a Choice row's names, for messages and help.
std::string choiceList(const SchemeParameter& row);
// The span a slider offers for a Number or Vector row holding `value`: from the row's min (0.01 where min itself
// is not valid) to its slider max, widened to hold the value (the export's PARAMETERS ranges).
std::pair<double, double> sliderSpan(const SchemeParameter& row, double value);
// The value as a person reads it: "0.5", "qwen25vl", "on", "4,8,8".
std::string valueText(const SchemeParameter& row, const SchemeParams& params);

// Throws InvalidInput naming the first Number row whose value is outside its range (rows with a range text).
void validateParameterRanges(const SchemeParams& params);
// The parameters that change where the scheme places tokens: every row the scheme does not read (reads() above)
// set to its default (what the PTD cache and "is this the same scheme" compare).
SchemeParams placementParams(SchemeParams params);

} // namespace ropescope::geometry
