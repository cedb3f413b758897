#pragma once
#include "app/cli/cli_error.h"
#include "core/geometry/age.h"
#include "core/geometry/errors.h"
#include "core/geometry/frequency.h"
#include "core/geometry/layout.h"
#include "core/geometry/scheme.h"

#include <QCommandLineParser>

#include <optional>

namespace ropescope::cli {

// What the scheme flags describe: a scheme with its parameters and optionally an AGE schedule, parsed
// (the schedule against a layer count). Commands whose layout comes from elsewhere (a model's tokens)
// use it alone.
struct SchemeRequest {
    geometry::SchemeParams params;
    std::optional<geometry::AgeSchedule> age;
};

// The flags of `positions`, `ptd` and `render`: a scheme request plus the layout and the AGE layer to show.
struct GeometryRequest : SchemeRequest {
    geometry::Layout layout;
    int layer = 0;

    // The parameters of the table shown: the scheme itself, or mrope where AGE says so for `layer`.
    geometry::SchemeParams effectiveParams() const;
    geometry::PositionTable build() const;
};

void addGeometryOptions(QCommandLineParser& parser);

// Reads and validates the flags; throws UsageError with a one-line message naming the bad flag. `rotary`: the rotary
// settings to start from (a model's layers, parseRotaryOptions) instead of the scheme's defaults.
GeometryRequest parseGeometryOptions(const QCommandLineParser& parser);
GeometryRequest parseGeometryOptions(const QCommandLineParser& parser, const std::optional<geometry::RotaryConfig>& rotary);

// `ptd` and `freqs`: a model's rotary without its weights, and Gemma's frequency forms by hand. --model DIR reads the
// folder's config.json (theta, head_dim, the rotated fraction, the pairing, Gemma's proportional and linearly scaled
// frequencies) of one kind of its decoder layers, --layer-kind sliding|full (default: layer 0's kind); --proportional
// and --linear-factor F set those two forms on a layout's rotary (with --partial-rotary: Gemma 4's full layers are
// --head-dim 512 --partial-rotary 0.25 --proportional).
void addRotaryOptions(QCommandLineParser& parser);
// The rotary --model gives (nullopt without it), to hand parseGeometryOptions; throws UsageError naming the flag (a
// folder without config.json, a layer kind the model lacks, --theta and the other rotary flags beside --model).
std::optional<geometry::RotaryConfig> parseRotaryOptions(const QCommandLineParser& parser);
// --proportional and --linear-factor on the parsed request (they change no pair count, so sections stay valid).
void applyRotaryForms(const QCommandLineParser& parser, GeometryRequest& req);

// `defaultScheme` applies when --scheme is absent; `layers` sizes an AGE schedule when --layers is absent.
SchemeRequest parseSchemeOptions(const QCommandLineParser& parser, geometry::SchemeKind defaultScheme, int layers);
// The same for a model run (default M-RoPE): --theta and --head-dim are refused, since the checkpoint's
// config.json decides the rotary base and head size.
// --layout and --layer are refused too (the prompt decides the layout), and so is a --layers other than
// the model's `layers`, naming both counts.
// `own`: the scheme used when --scheme is not given (the model's: glm-v for GLM-V, mrope for Qwen).
SchemeRequest parseModelSchemeOptions(const QCommandLineParser& parser, int layers, geometry::SchemeKind own = geometry::SchemeKind::Mrope);
// The flag checks of parseModelSchemeOptions for commands that learn the model's layer count later
// (train, eval): what they refuse before any model is read.
void refuseLayoutOnlyFlags(const QCommandLineParser& parser);

// A core error in this command line's words: the parameter it names becomes its flag ("head_dim" ->
// "--head-dim: ..."); an error that names none is kept as it is.
UsageError usageError(const geometry::InvalidInput& e);

// Parses a number given to `flag`; throws UsageError naming the flag.
double parseNumber(const QCommandLineParser& parser, const QString& flag);
int parseInteger(const QCommandLineParser& parser, const QString& flag);

// Runs the parser over `args` (program name first); throws UsageError for unknown flags or stray
// arguments, prints the help and throws HelpShown for --help.
void parseOrThrow(QCommandLineParser& parser, const QStringList& args, bool allowPositional = false);

} // namespace ropescope::cli
