#include "app/cli/geometry_options.h"

#include "app/cli/cli_error.h"
#include "core/geometry/errors.h"
#include "core/geometry/scheme_parameters.h"
#include "core/io/atomic_file.h"
#include "core/model/engine/layer_rotary.h"
#include "core/user_schemes/position_file.h"
#include "core/user_schemes/python_scheme.h"

#include <QFileInfo>
#include <QRegularExpression>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ropescope::cli {
using namespace geometry;

namespace {

std::string str(const QString& s)
{
    return s.toStdString();
}

std::vector<double> parseList(const QCommandLineParser& parser, const QString& flag, int expected)
{
    const QStringList parts = parser.value(flag).split(',');
    if (parts.size() != expected)
        throw UsageError(
            str("--" + flag + ": expected " + QString::number(expected) + " comma-separated numbers, got '" + parser.value(flag) + "'"));
    std::vector<double> values;
    for (const QString& p : parts) {
        bool ok = false;
        const double v = p.trimmed().toDouble(&ok);
        if (!ok)
            throw UsageError(str("--" + flag + ": '" + p + "' is not a number"));
        values.push_back(v);
    }
    return values;
}

void parseRadius(const QString& text, CircleParams& circle)
{
    // R, auto[-K] (paper: K * max ||(x,y)||_2), code-auto[-K] (official code: K * max coordinate).
    static const QRegularExpression pattern("^(code-auto|auto)(?:-(.+))?$");
    const QRegularExpressionMatch m = pattern.match(text);
    bool ok = true;
    if (m.hasMatch()) {
        circle.radiusMode = m.captured(1) == "auto" ? RadiusMode::AutoPaper : RadiusMode::AutoCode;
        circle.radius = m.captured(2).isEmpty() ? 1.0 : m.captured(2).toDouble(&ok);
    } else {
        circle.radiusMode = RadiusMode::Fixed;
        circle.radius = text.toDouble(&ok);
    }
    if (!ok)
        throw UsageError(str("--radius: '" + text + "' is not R, auto-K or code-auto-K"));
}

} // namespace

void parseOrThrow(QCommandLineParser& parser, const QStringList& args, bool allowPositional)
{
    parser.setSingleDashWordOptionMode(QCommandLineParser::ParseAsLongOptions);
    parser.addHelpOption();
    if (!parser.parse(args))
        throw UsageError(str(parser.errorText()));
    if (parser.isSet("help")) {
        // Qt's first line names the executable's full path; name the command, as it is typed.
        QString text = parser.helpText();
        const QString command = args.isEmpty() ? QString() : args.first().section(' ', -1);
        const qsizetype options = text.indexOf(" [options]");
        if (text.startsWith("Usage: ") && options > 0 && !command.isEmpty())
            text = "Usage: ropescope " + command + text.mid(options);
        std::fputs(qPrintable(text), stdout);
        throw HelpShown{};
    }
    if (!parser.positionalArguments().isEmpty() && !allowPositional)
        throw UsageError(str("unexpected argument '" + parser.positionalArguments().first() + "'"));
    // An empty path would resolve to the current folder: refuse it rather than write there.
    for (const QString& flag : {QString("output"), QString("save-samples")})
        if (parser.optionNames().contains(flag) && parser.value(flag).isEmpty())
            throw UsageError(str("--" + flag + ": the path is empty; name a file or folder"));
}

double parseNumber(const QCommandLineParser& parser, const QString& flag)
{
    bool ok = false;
    const double v = parser.value(flag).toDouble(&ok);
    if (!ok)
        throw UsageError(str("--" + flag + ": '" + parser.value(flag) + "' is not a number"));
    return v;
}

int parseInteger(const QCommandLineParser& parser, const QString& flag)
{
    bool ok = false;
    const int v = parser.value(flag).toInt(&ok);
    if (!ok)
        throw UsageError(str("--" + flag + ": '" + parser.value(flag) + "' is not a whole number"));
    return v;
}

void addGeometryOptions(QCommandLineParser& parser)
{
    // The built-in schemes' one-line summaries (the explorer's tooltips) under the command's own description.
    QString schemes = "Built-in schemes:";
    for (const SchemeKind kind : allSchemes())
        schemes += QString("\n  ") + schemeSummary(kind);
    parser.setApplicationDescription(parser.applicationDescription().isEmpty() ? schemes
                                                                               : parser.applicationDescription() + "\n\n" + schemes);
    parser.addOptions({
        {"scheme",
         QString::fromStdString("Position scheme: " + schemeNameList() +
                                ", or a Python scheme file (my_scheme.py: "
                                "docs/USER_SCHEMES.md)."),
         "S"},
        {"param", "A Python scheme's parameter (one of its PARAMETERS), NAME=VALUE; repeat for several.", "NAME=VALUE"},
        {"scheme-imports",
         "Let the Python scheme import the .py files beside it (read once with it, and covered by its sha256); "
         "without this its folder is not on sys.path."},
        {"positions",
         "Positions read from a table instead of a scheme: the CSV or JSON `positions` writes, a .npy [C,L] "
         "array, or a .safetensors with position_ids [3,1,L] as transformers returns them.",
         "FILE"},
        {"layout", "Sequence layout, e.g. text:4,image:8x8,text:6 (video:TxHxW).", "L"},
        {"radius",
         "Circle-RoPE radius: R (default 10), auto-K (paper: K*max||(x,y)||), code-auto-K (official code: "
         "K*max coordinate).",
         "R"},
        {"age", "AGE layer schedule: strategy_1..strategy_4 or a C/M pattern such as CCM.", "STRATEGY"},
        {"layer", "Decoder layer whose table to show under --age (default 0).", "I"},
        {"layers", QString("Number of decoder layers for --age (default %1, as the official code).").arg(kDefaultAgeLayers), "N"},
        {"theta", "Rotary base theta (default 1e6; 1e4 for glm-v and xd-rope, 5e5 for ernie-vl).", "T"},
        {"head-dim", "Rotary head dimension (default 128).", "D"},
        {"partial-rotary",
         "Fraction of each head's dims that rotate, in (0, 1] (default 1, 0.5 for glm-v; Qwen3.5 0.25): "
         "the frequencies and sections cover those dims, the rest carry no position.",
         "F"},
        {"pairing",
         "Which dims each rotary frequency turns: half (j, j+d/2; Qwen, Llama) or adjacent (2j, 2j+1; GLM-4.1V/4.6V) "
         "(default: the scheme's own, adjacent for glm-v). Model runs use the model's.",
         "P"},
        {"allocation",
         "Frequency allocation: sectioned, interleaved (j mod C), interleaved-mrope (Qwen3-VL's MRoPE-I, "
         "sections t,h,w default 24,20,20), hw-alternating (VideoRoPE's: h on odd, w on even pairs below "
         "2h / 2w, t the rest; default " +
             QString::fromStdString(sectionsText(defaultMropeSection(128))) +
             "), distributed (MM-RoPE's T,T,H,W,H,W,H,W per 8 pairs) or "
             "per-head (MHRoPE's: --mrope-section gives heads per axis, default 2,3,3 of 8) or hw-interleaved (ERNIE-4.5-VL's: "
             "h and w alternate over the high frequencies, t the lowest; sections t,h,w default 20,22,22) "
             "(default: the scheme's own).",
         "KIND"},
        {"video",
         "How a video:TxHxW is placed: grid (one T x H x W grid) or split (T one-frame grids, Qwen3-VL's form and "
         "the reference library's for every scheme). Default: split for mrope-i and mhrope, grid for the others.",
         "FORM"},
        {"kv-heads", "Heads a per-head allocation (MHRoPE) spreads its axes over (default 8; model runs use the model's).", "N"},
        {"mrope-section",
         "Frequencies per component for sectioned allocation (default " + QString::fromStdString(sectionsText(defaultMropeSection(128))) +
             " at head_dim 128).",
         "a,b,c"},
    });
    // The scheme parameters: flag, help and placeholder from the parameter table (a row with no help has its own
    // option above: --radius).
    for (const SchemeParameter& row : schemeParameters())
        if (*row.help)
            parser.addOption(QCommandLineOption(row.flag, row.help, row.valueName));
}

namespace {

// --param NAME=VALUE, repeated.
CustomValues parseCustomValues(const QCommandLineParser& parser)
{
    CustomValues values;
    for (const QString& given : parser.values("param")) {
        const qsizetype eq = given.indexOf('=');
        bool ok = false;
        const double v = eq > 0 ? given.mid(eq + 1).trimmed().toDouble(&ok) : 0.0;
        if (eq <= 0 || !ok)
            throw UsageError(str("--param: expected NAME=NUMBER, got '" + given + "'"));
        values[str(given.left(eq).trimmed())] = v;
    }
    return values;
}

// A scheme from the user's files: --scheme FILE.py (typed on the command line, so trusted: its code runs)
// or --positions FILE.
std::optional<CustomSchemeRef> customScheme(const QCommandLineParser& parser, std::optional<Layout>* fileLayout)
{
    const bool python = parser.isSet("scheme") && user_schemes::isPythonSchemePath(str(parser.value("scheme")));
    if (parser.isSet("positions") && parser.isSet("scheme"))
        throw UsageError("--positions: the table gives every position; leave out --scheme");
    if (parser.isSet("param") && !python)
        throw UsageError("--param: sets a Python scheme's parameter; --scheme names no .py file");
    if (parser.isSet("scheme-imports") && !python)
        throw UsageError("--scheme-imports: lets a Python scheme import its neighbours; --scheme names no .py file");
    try {
        if (python) {
            CustomSchemeRef ref = user_schemes::pythonSchemeRef(
                user_schemes::loadPythonScheme(str(parser.value("scheme")), parser.isSet("scheme-imports")), parseCustomValues(parser));
            return ref;
        }
        if (parser.isSet("positions")) {
            const user_schemes::PositionFile file = user_schemes::readPositionFile(str(parser.value("positions")));
            if (fileLayout)
                *fileLayout = file.layout;
            return user_schemes::positionFileRef(file);
        }
    } catch (const InvalidInput& e) {
        throw usageError(e);
    } catch (const io::IoError& e) {
        throw UsageError(std::string(python ? "--scheme: " : "--positions: ") + e.what());
    }
    return std::nullopt;
}

// One scheme parameter's flag, as its row's type reads it: a number, one of its choices, on|off, or x,y,z.
void parseParameter(const QCommandLineParser& parser, const SchemeParameter& row, SchemeParams& p)
{
    const QString flag = QString::fromUtf8(row.flag);
    const std::string given = str(parser.value(flag));
    switch (row.type) {
    case SchemeParameter::Type::Number: row.set(p, parseNumber(parser, flag)); return;
    case SchemeParameter::Type::Choice: {
        const auto index = choiceIndex(row, given);
        if (!index)
            throw UsageError("--" + str(flag) + ": expected " + choiceList(row) + ", got '" + given + "'");
        row.set(p, *index);
        return;
    }
    case SchemeParameter::Type::Flag:
        if (given != "on" && given != "off")
            throw UsageError("--" + str(flag) + ": expected on or off, got '" + given + "'");
        row.set(p, given == "on" ? 1 : 0);
        return;
    case SchemeParameter::Type::Vector: {
        const auto v = parseList(parser, flag, 3);
        row.setVector(p, {v[0], v[1], v[2]});
        return;
    }
    }
}

SchemeParams parseSchemeParams(const QCommandLineParser& parser, SchemeKind kind, std::optional<CustomSchemeRef> custom = std::nullopt,
                               const RotaryConfig* base = nullptr)
{
    SchemeParams p = defaultSchemeParams(kind); // GLM-V's own theta, partial rotary and pairing unless given
    if (base)                                   // ptd and freqs with --model: the rotary of the model's layers of one kind
        p.rotary = *base;
    p.custom = std::move(custom);
    for (const SchemeParameter& row : schemeParameters()) // the table's parameters, each by its type
        if (*row.help && parser.isSet(row.flag))
            parseParameter(parser, row, p);
    if (parser.isSet("radius"))
        parseRadius(parser.value("radius"), p.circle);
    if (parser.isSet("theta"))
        p.rotary.theta = parseNumber(parser, "theta");
    if (parser.isSet("head-dim"))
        p.rotary.headDim = parseInteger(parser, "head-dim");
    if (parser.isSet("partial-rotary"))
        p.rotary.partial = parseNumber(parser, "partial-rotary");
    if (parser.isSet("pairing")) {
        const auto pairing = rotaryPairingFromName(str(parser.value("pairing")));
        if (!pairing)
            throw UsageError(str("--pairing: unknown pairing '" + parser.value("pairing") + "' (expected half or adjacent)"));
        p.rotary.pairing = *pairing;
    }
    if (parser.isSet("allocation")) {
        const QString a = parser.value("allocation");
        p.allocationKind = allocationKindFromName(str(a));
        if (!p.allocationKind)
            throw UsageError(
                str("--allocation: unknown allocation '" + a +
                    "' (expected sectioned, interleaved, interleaved-mrope, hw-alternating, distributed, per-head or hw-interleaved)"));
    }
    if (parser.isSet("video") && p.custom)
        throw UsageError("--video: a scheme file or position table places videos itself");
    if (parser.isSet("video")) {
        p.videoForm = videoFormFromName(str(parser.value("video")));
        if (!p.videoForm)
            throw UsageError("--video: expected grid or split, got '" + str(parser.value("video")) + "'");
    }
    if (parser.isSet("kv-heads"))
        p.rotary.heads = parseInteger(parser, "kv-heads");
    if (parser.isSet("mrope-section")) {
        for (double s : parseList(parser, "mrope-section", componentCount(p))) {
            if (s != static_cast<int>(s))
                throw UsageError("--mrope-section: sections must be whole numbers");
            p.sections.push_back(static_cast<int>(s));
        }
    }
    return p;
}

SchemeKind schemeKind(const QCommandLineParser& parser)
{
    if (user_schemes::isPythonSchemePath(str(parser.value("scheme"))))
        return SchemeKind::Mrope; // placement comes from the file; the base kind only names defaults
    const auto kind = schemeFromName(str(parser.value("scheme")));
    if (!kind)
        throw UsageError(str("--scheme: unknown scheme '" + parser.value("scheme") + "' (expected ") + schemeNameList() + ")");
    return *kind;
}

} // namespace

UsageError usageError(const InvalidInput& e)
{
    if (e.parameter().empty())
        return UsageError(e.what());
    // The flags spell the keys with dashes; two have their own names.
    std::string flag = e.parameter() == "sections" ? "mrope-section" : e.parameter() == "age_layers" ? "layers" : e.parameter();
    std::replace(flag.begin(), flag.end(), '_', '-');
    return UsageError("--" + flag + ": " + e.reason());
}

namespace {

SchemeRequest parseSchemeOptions(const QCommandLineParser& parser, SchemeKind defaultScheme, int layers, std::optional<Layout>* fileLayout,
                                 const RotaryConfig* base = nullptr)
{
    SchemeRequest req;
    const SchemeKind kind = parser.isSet("scheme") ? schemeKind(parser) : defaultScheme;
    req.params = parseSchemeParams(parser, kind, customScheme(parser, fileLayout), base);
    if (req.params.custom && parser.isSet("age"))
        throw UsageError("--age: switches layers between circle and mrope; " + customLabel(*req.params.custom) +
                         " places every layer itself");
    try {
        validate(req.params);
        if (parser.isSet("age"))
            req.age = parseAgeSchedule(str(parser.value("age")), parser.isSet("layers") ? parseInteger(parser, "layers") : layers);
    } catch (const InvalidInput& e) {
        throw usageError(e);
    }
    return req;
}

} // namespace

SchemeRequest parseSchemeOptions(const QCommandLineParser& parser, SchemeKind defaultScheme, int layers)
{
    return parseSchemeOptions(parser, defaultScheme, layers, nullptr);
}

void refuseLayoutOnlyFlags(const QCommandLineParser& parser)
{
    for (const char* flag : {"theta", "head-dim", "partial-rotary", "pairing", "kv-heads"})
        if (parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": a model run uses its config.json's rotary settings; this flag is for layouts");
    for (const char* flag : {"layout", "layer"})
        if (parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": a model run takes its layout from the prompt; this flag is for layouts");
    // XD-RoPE's newline column adds tokens a model's prompt does not hold: a run places the prompt's own.
    if (parser.isSet("newline-column") && parser.value("newline-column") != "off")
        throw UsageError(
            "--newline-column: a model run places the prompt's own tokens (no newline or span tokens); leave it out or give off");
}

void checkModelLayers(const QCommandLineParser& parser, int layers)
{
    if (!parser.isSet("layers"))
        return;
    const int given = parseInteger(parser, "layers");
    if (given != layers)
        throw UsageError("--layers " + std::to_string(given) + ": the model has " + std::to_string(layers) +
                         " decoder layers, and a model run takes its AGE layer count from the model (leave --layers out)");
}

SchemeRequest parseModelSchemeOptions(const QCommandLineParser& parser, int layers, SchemeKind own)
{
    refuseLayoutOnlyFlags(parser);
    checkModelLayers(parser, layers);
    return parseSchemeOptions(parser, own, layers);
}

GeometryRequest parseGeometryOptions(const QCommandLineParser& parser)
{
    return parseGeometryOptions(parser, std::nullopt);
}

GeometryRequest parseGeometryOptions(const QCommandLineParser& parser, const std::optional<RotaryConfig>& rotary)
{
    GeometryRequest req;
    if (!parser.isSet("scheme") && !parser.isSet("positions"))
        throw UsageError("--scheme is required (" + schemeNameList() + ", a Python scheme file, or --positions FILE)");
    if (!parser.isSet("layout") && !parser.isSet("positions"))
        throw UsageError("--layout is required, e.g. --layout text:4,image:8x8,text:6");
    try {
        if (parser.isSet("layout"))
            req.layout = parseLayout(str(parser.value("layout")));
    } catch (const InvalidInput& e) {
        throw usageError(e);
    }
    std::optional<Layout> fileLayout;
    static_cast<SchemeRequest&>(req) = parseSchemeOptions(parser, parser.isSet("scheme") ? schemeKind(parser) : SchemeKind::Mrope,
                                                          kDefaultAgeLayers, &fileLayout, rotary ? &*rotary : nullptr);
    if (!parser.isSet("layout")) {
        if (!fileLayout)
            throw UsageError("--layout is required: " + customLabel(*req.params.custom) +
                             " has no modality columns (a .npy or .safetensors holds positions only)");
        req.layout = *fileLayout;
    }
    if (req.params.custom) {
        // The file runs (or the table is matched) on this layout now, so its errors are this command line's.
        try {
            (void)buildPositionTable(req.layout, req.params);
        } catch (const InvalidInput& e) {
            throw usageError(e);
        }
    }
    try {
        if (req.age) {
            req.layer = parser.isSet("layer") ? parseInteger(parser, "layer") : 0;
            validate(req.effectiveParams());
        } else if (parser.isSet("layer") || parser.isSet("layers")) {
            throw UsageError("--layer and --layers select an AGE layer and need --age");
        }
    } catch (const InvalidInput& e) {
        throw usageError(e);
    }
    return req;
}

SchemeParams GeometryRequest::effectiveParams() const
{
    return age ? layerParams(params, *age, layer) : params;
}

PositionTable GeometryRequest::build() const
{
    return buildPositionTable(layout, effectiveParams());
}

void addRotaryOptions(QCommandLineParser& parser)
{
    parser.addOptions({
        {"model",
         "Take the rotary from a model folder's config.json (or that file): theta, head_dim, the rotated fraction, the pairing and "
         "Gemma's frequency forms, of the decoder layers --layer-kind names. No weights are read.",
         "DIR"},
        {"layer-kind",
         "With --model: sliding or full, whose rotary to use (Gemma's full layers rotate differently: Gemma 4's a quarter of a "
         "512-wide head, proportionally; default: layer 0's kind).",
         "KIND"},
        {"proportional",
         "Gemma 4's full-layer rotary: the rotated pairs turn at theta^(-2j/head_dim) on dims j and j+head_dim/2, the head's "
         "other pairs at frequency 0 (with --partial-rotary)."},
        {"linear-factor", "Divide every rotary frequency by F (Gemma 3's full layers: 8, its linear rope scaling).", "F"},
    });
}

std::optional<RotaryConfig> parseRotaryOptions(const QCommandLineParser& parser)
{
    if (!parser.isSet("model")) {
        if (parser.isSet("layer-kind"))
            throw UsageError("--layer-kind: picks a kind of a model's decoder layers; give --model DIR");
        return std::nullopt;
    }
    for (const char* flag : {"theta", "head-dim", "partial-rotary", "pairing", "kv-heads", "proportional", "linear-factor"})
        if (parser.isSet(flag))
            throw UsageError(std::string("--") + flag + ": --model gives the rotary settings; leave one of the two out");
    QString path = parser.value("model");
    if (QFileInfo(path).isDir())
        path += "/config.json";
    model::ModelConfig cfg;
    try {
        cfg = model::loadModelConfig(path);
    } catch (const std::exception& e) {
        throw UsageError(std::string("--model: ") + e.what());
    }
    const model::TextConfig& t = cfg.text;
    int layer = 0;
    if (parser.isSet("layer-kind")) {
        const QString kind = parser.value("layer-kind");
        if (kind != "sliding" && kind != "full")
            throw UsageError("--layer-kind: expected sliding or full, got '" + str(kind) + "'");
        layer = -1;
        for (int l = 0; l < t.layers && layer < 0; ++l)
            if (t.isSliding(l) == (kind == "sliding"))
                layer = l;
        if (layer < 0)
            throw UsageError("--layer-kind " + str(kind) + ": " + cfg.modelType + " has no " + str(kind) + " layers");
    }
    return model::rotaryOfLayer(t, layer);
}

void applyRotaryForms(const QCommandLineParser& parser, GeometryRequest& req)
{
    if (parser.isSet("proportional"))
        req.params.rotary.proportional = true;
    if (parser.isSet("linear-factor")) {
        const double factor = parseNumber(parser, "linear-factor");
        if (!(factor > 0) || !std::isfinite(factor))
            throw UsageError("--linear-factor: expected a positive number");
        req.params.rotary.linearFactor = factor;
    }
}

} // namespace ropescope::cli
