#include "app/cli/bench_attention.h"
#include "app/cli/bench_bias.h"
#include "app/cli/bench_positions.h"
#include "app/cli/bench_model.h"
#include "app/cli/bench_timing.h"
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/figure_options.h"
#include "app/cli/geometry_options.h"
#include "app/cli/output.h"
#include "core/geometry/errors.h"
#include "core/geometry/metrics.h"
#include "core/geometry/scheme.h"
#include "core/io/atomic_file.h"
#include "core/user_schemes/python_scheme.h"
#ifdef ROPESCOPE_WITH_RENDER
#include "views/render/offscreen_view.h"
#endif
#include "core/session/readouts.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QJsonDocument>

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <thread>

namespace ropescope::cli {
using namespace geometry;

namespace {

// `count` images of HxW spread evenly among `text` text tokens, with text before, between and after.
std::string interleavedLayout(int text, int count, int grid)
{
    std::string out;
    const int gaps = count + 1;
    for (int i = 0; i < gaps; ++i) {
        const int len = (i + 1) * text / gaps - i * text / gaps;
        out += "text:" + std::to_string(len);
        if (i < count)
            out += ",image:" + std::to_string(grid) + "x" + std::to_string(grid) + ",";
    }
    return out;
}

// The text token just before the first visual block: where a model's question usually starts.
int probeTextToken(const PositionTable& t)
{
    const int before = t.blocks.front().begin - 1;
    return before >= 0 && t.isText(before) ? before : t.textTokens.front();
}

int benchGeometry(const QCommandLineParser& parser)
{
    SchemeParams params;
    params.kind = SchemeKind::Circle;
    if (parser.isSet("scheme")) {
        const auto kind = schemeFromName(parser.value("scheme").toStdString());
        if (!kind)
            throw UsageError("--scheme: unknown scheme '" + parser.value("scheme").toStdString() + "'");
        params.kind = *kind;
    }
    const std::vector<std::string> layouts{
        "text:32,image:8x8,text:32",
        "text:1024,image:32x32,text:1024",
        interleavedLayout(2048, 4, 32),
        interleavedLayout(8192, 16, 64),
    };
    const std::vector<std::string> labels{
        "text:32,image:8x8,text:32",
        "text:1024,image:32x32,text:1024",
        "4 x image:32x32 among 2048 text",
        "16 x image:64x64 among 8192 text",
    };

    QJsonArray rows;
    QByteArray text = "scheme " + QByteArray(schemeName(params.kind)) + ", " +
        QByteArray::number(std::max(1u, std::thread::hardware_concurrency())) + " threads\n";
    text += QByteArray("layout").leftJustified(36) + QByteArray("tokens").leftJustified(8) + QByteArray("stage").leftJustified(11) +
        QByteArray("min_ms").rightJustified(10) + QByteArray("median_ms").rightJustified(11) + QByteArray("runs").rightJustified(6) + "\n";
    for (size_t i = 0; i < layouts.size(); ++i) {
        const Layout layout = parseLayout(layouts[i]);
        const PositionTable table = buildPositionTable(layout, params);
        const int probe = probeTextToken(table);
        const std::vector<std::pair<const char*, std::function<void()>>> stages{
            {"positions", [&] { buildPositionTable(layout, params); }},
            {"ptd", [&] { computePtd(table); }},
            {"prior", [&] { positionalPrior(table, probe); }},
            {"crowding", [&] { visualCrowding(table); }},
        };
        for (const auto& [stage, fn] : stages) {
            const Timing t = timeIt(fn);
            QJsonObject row;
            row["layout"] = QString::fromStdString(layouts[i]);
            row["label"] = QString::fromStdString(labels[i]);
            row["scheme"] = schemeName(params.kind);
            row["tokens"] = table.size();
            row["stage"] = stage;
            row["min_ms"] = t.minMs;
            row["median_ms"] = t.medianMs;
            row["runs"] = t.runs;
            rows.append(row);
            text += QByteArray::fromStdString(labels[i]).leftJustified(36) + QByteArray::number(table.size()).leftJustified(8) +
                QByteArray(stage).leftJustified(11) + QByteArray::number(t.minMs, 'f', 3).rightJustified(10) +
                QByteArray::number(t.medianMs, 'f', 3).rightJustified(11) + QByteArray::number(t.runs).rightJustified(6) + "\n";
        }
    }
    writeOutput(parser.value("output"), parser.isSet("json") ? QJsonDocument(rows).toJson() : text);
    return 0;
}

// A custom scheme that forwards to another and keeps what it returned, then (replay()) serves the same
// positions from memory: bench live's way of timing the same frames with and without a Python worker.
class RecordedScheme final : public CustomScheme {
public:
    explicit RecordedScheme(std::shared_ptr<const CustomScheme> inner) : inner_(std::move(inner)) { }
    void replay() { replaying_ = true; }
    const std::string& file() const override { return inner_->file(); }
    const std::string& sha256() const override { return inner_->sha256(); }
    std::string label() const override { return inner_->label(); }
    int components() const override { return inner_->components(); }
    std::vector<std::string> componentNames() const override { return inner_->componentNames(); }
    std::vector<CustomParameter> parameters() const override { return inner_->parameters(); }
    std::optional<std::vector<int>> allocation(int headDim, int halfDim) const override { return inner_->allocation(headDim, halfDim); }
    Eigen::MatrixXd positions(const Layout& layout, const CustomValues& values) const override
    {
        const auto key = std::make_pair(layout.toString(), values);
        if (replaying_)
            if (const auto it = seen_.find(key); it != seen_.end())
                return it->second;
        Eigen::MatrixXd out = inner_->positions(layout, values);
        seen_[key] = out;
        return out;
    }

private:
    std::shared_ptr<const CustomScheme> inner_;
    bool replaying_ = false;
    mutable std::map<std::pair<std::string, CustomValues>, Eigen::MatrixXd> seen_;
};

#ifdef ROPESCOPE_WITH_RENDER
// The layouts bench live times, as (layout, label): --layout's alone, else a small and a large standard one.
std::vector<std::pair<std::string, std::string>> liveLayouts(const QCommandLineParser& parser)
{
    if (!parser.isSet("layout"))
        return {
            {"text:32,image:16x16,text:32", "text:32,image:16x16,text:32"},
            {interleavedLayout(2048, 4, 32), "4 x image:32x32 among 2048 text"},
        };
    try {
        const std::string layout = parseLayout(parser.value("layout").toStdString()).toString();
        return {{layout, layout}};
    } catch (const InvalidInput& e) {
        throw usageError(e);
    }
}

// The scheme under test and the name of what its frames sweep.
struct LiveScheme {
    session::ExplorerState base;
    QByteArray sweptName = "alpha";
};

// Circle (alpha swept) by default; a built-in by name; a Python scheme file with its first PARAMETERS entry swept
// from min to max, so every frame runs the file (a repeated value would be served from its cache).
LiveScheme liveScheme(const QCommandLineParser& parser)
{
    LiveScheme live;
    if (!parser.isSet("scheme"))
        return live;
    const std::string scheme = parser.value("scheme").toStdString();
    try {
        if (user_schemes::isPythonSchemePath(scheme)) {
            live.base.params.custom = user_schemes::pythonSchemeRef(user_schemes::loadPythonScheme(scheme));
            const auto declared = live.base.params.custom->scheme->parameters();
            live.sweptName = declared.empty() ? QByteArray("nothing (no PARAMETERS: frames after the first reuse its positions)")
                                              : QByteArray::fromStdString(declared.front().name);
        } else if (const auto kind = schemeFromName(scheme)) {
            live.base.params.kind = *kind;
        } else {
            throw UsageError("--scheme: unknown scheme '" + scheme + "' (expected " + schemeNameList() + " or a .py file)");
        }
    } catch (const InvalidInput& e) {
        throw usageError(e);
    } catch (const io::IoError& e) {
        throw UsageError(std::string("--scheme: ") + e.what());
    }
    return live;
}

// One pass of the sweep over a layout: the row's timings.
struct LivePass {
    int tokens = 0;
    double median = 0, p95 = 0, first = 0, readouts = 0, scene = 0, render = 0;
};

// `steps` + 1 frames of `state` on `view`, the swept value going from its start to its end; the first frame
// (shader compilation and first uploads) is reported apart, not counted.
LivePass runLivePass(views::OffscreenView& view, session::ExplorerState state, int steps)
{
    session::ReadoutEngine engine;
    std::vector<double> ms, readoutMs, sceneMs, renderMs;
    LivePass out;
    for (int step = 0; step <= steps; ++step) {
        state.params.circle.alpha = static_cast<double>(step) / steps;
        if (state.params.custom && !state.params.custom->scheme->parameters().empty()) {
            const geometry::CustomParameter p = state.params.custom->scheme->parameters().front();
            state.params.custom->values[p.name] = p.min + (p.max - p.min) * step / steps;
        }
        const auto t0 = std::chrono::steady_clock::now();
        const session::Readouts r = engine.compute(state);
        const auto t1 = std::chrono::steady_clock::now();
        views::SceneOptions options;
        options.selectedToken = r.selectedText;
        options.showLabels = state.showLabels;
        view.scene().update(r.table, options);
        if (step == 0)
            view.scene().applyCamera(views::CameraPreset::Isometric);
        const auto t2 = std::chrono::steady_clock::now();
        view.renderAndFinish();
        const auto t3 = std::chrono::steady_clock::now();
        auto msBetween = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
        out.tokens = r.table.size();
        if (step == 0) {
            out.first = msBetween(t0, t3); // shader compilation and first uploads: reported, not counted
        } else {
            ms.push_back(msBetween(t0, t3));
            readoutMs.push_back(msBetween(t0, t1));
            sceneMs.push_back(msBetween(t1, t2));
            renderMs.push_back(msBetween(t2, t3));
        }
    }
    auto medianOf = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v[v.size() / 2];
    };
    std::sort(ms.begin(), ms.end());
    out.median = ms[ms.size() / 2];
    out.p95 = ms[static_cast<size_t>(0.95 * static_cast<double>(ms.size() - 1))];
    out.readouts = medianOf(readoutMs);
    out.scene = medianOf(sceneMs);
    out.render = medianOf(renderMs);
    return out;
}

// The JSON rows and the text table bench live prints, a row per pass.
struct LiveReport {
    QJsonArray rows;
    QByteArray text;

    void add(const std::string& layout, const std::string& label, const LivePass& pass, const geometry::SchemeParams& params,
             const std::string& route)
    {
        QJsonObject row;
        row["layout"] = QString::fromStdString(layout);
        row["label"] = QString::fromStdString(label);
        row["tokens"] = pass.tokens;
        row["median_ms"] = pass.median;
        row["p95_ms"] = pass.p95;
        row["first_ms"] = pass.first;
        row["readouts_median_ms"] = pass.readouts;
        row["scene_median_ms"] = pass.scene;
        row["render_median_ms"] = pass.render;
        row["route"] = QString::fromStdString(route);
        row["scheme"] = QString::fromStdString(geometry::schemeLabel(params));
        rows.append(row);
        text += QByteArray::fromStdString(label).leftJustified(46) + QByteArray::number(pass.tokens).leftJustified(8) +
            QByteArray::number(pass.median, 'f', 2).rightJustified(10) + QByteArray::number(pass.p95, 'f', 2).rightJustified(10) +
            QByteArray::number(pass.first, 'f', 1).rightJustified(10) + QByteArray::number(pass.readouts, 'f', 2).rightJustified(12) +
            QByteArray::number(pass.scene, 'f', 2).rightJustified(10) + QByteArray::number(pass.render, 'f', 2).rightJustified(11) + "\n";
    }
};
#endif

// Time from a parameter change (alpha) to a finished frame, offscreen: readouts, scene update, render,
// glFinish. 200 steps sweep alpha across [0, 1].
int benchLive(const QCommandLineParser& parser)
{
#ifndef ROPESCOPE_WITH_RENDER
    Q_UNUSED(parser);
    throw Failure("live: this build has no VTK (configured with -DROPESCOPE_RENDER=OFF)");
#else
    const std::vector<std::pair<std::string, std::string>> layouts = liveLayouts(parser);
    const int steps = parser.isSet("steps") ? parseInteger(parser, "steps") : 200;
    if (steps < 1 || steps > 10000)
        throw UsageError("--steps: expected 1 to 10000");
    const LiveScheme scheme = liveScheme(parser);
    const session::ExplorerState& base = scheme.base;
    QSize size(1280, 800);
    std::unique_ptr<views::OffscreenView> view;
    try {
        view = std::make_unique<views::OffscreenView>(size);
    } catch (const std::runtime_error& e) {
        throw Failure(e.what());
    }
    LiveReport report;
    QByteArray& text = report.text;
    text = "offscreen " + QByteArray::fromStdString(view->route()) + ", " + QByteArray::number(size.width()) + "x" +
        QByteArray::number(size.height()) + ", scheme " + QByteArray::fromStdString(geometry::schemeLabel(base.params)) + ", " +
        QByteArray::number(steps) + " steps of " + scheme.sweptName + "\n";
    text += QByteArray("layout").leftJustified(46) + QByteArray("tokens").leftJustified(8) + QByteArray("median_ms").rightJustified(10) +
        QByteArray("p95_ms").rightJustified(10) + QByteArray("first_ms").rightJustified(10) + QByteArray("readouts_ms").rightJustified(12) +
        QByteArray("scene_ms").rightJustified(10) + QByteArray("render_ms").rightJustified(11) + "\n";
    // One pass of the sweep over a layout with `params`.
    const auto runPass = [&](const std::string& layout, const geometry::SchemeParams& params) {
        session::ExplorerState state = base;
        state.params = params;
        state.layout = layout;
        return runLivePass(*view, state, steps);
    };
    for (const auto& [layout, label] : layouts) {
        if (!base.params.custom) {
            report.add(layout, label, runPass(layout, base.params), base.params, view->route());
            continue;
        }
        // A Python scheme: the same sweep twice in this run, through the worker and then with the very positions
        // it returned served from memory (RecordedScheme), so the two rows differ only by what Python costs.
        auto recorded = std::make_shared<RecordedScheme>(base.params.custom->scheme);
        geometry::SchemeParams live = base.params;
        live.custom->scheme = recorded; // records while it forwards to the worker
        const LivePass python = runPass(layout, live);
        recorded->replay();
        const LivePass replayed = runPass(layout, live);
        report.add(layout, label + " (Python)", python, base.params, view->route());
        report.add(layout, label + " (replayed)", replayed, base.params, view->route());
        // The scene and the render see the same positions in both passes: their difference is noise, and the
        // readouts' difference (where positions() is called) is what Python costs.
        text += QByteArray("  Python's cost per frame: ") + QByteArray::number(python.readouts - replayed.readouts, 'f', 2) +
            " ms in the readouts (the goal: under 2 ms); whole frames " + QByteArray::number(python.median, 'f', 2) + " vs " +
            QByteArray::number(replayed.median, 'f', 2) + " ms replayed\n";
    }
    writeOutput(parser.value("output"), parser.isSet("json") ? QJsonDocument(report.rows).toJson() : report.text);
    return 0;
#endif
}

} // namespace

int runBench(const QStringList& args)
{
    QCommandLineParser parser;
    parser.addPositionalArgument("suite", "geometry, live, model, attention, bias, positions or positions-memory");
    parser.addOptions({
        {"json", "Print JSON rows (layout, stage, min_ms, median_ms) instead of a table."},
        {"scheme", "Scheme to time (geometry, live; default circle): a built-in or a Python scheme file (live sweeps its first parameter).",
         "S"},
        {"output", "Write to this file (atomically) instead of standard output.", "F"},
        {"layout", "live: time this layout instead of the two standard ones.", "L"},
        {"steps", "live: alpha steps to time (default 200).", "N"},
    });
    addBenchModelOptions(parser);
    parseOrThrow(parser, args, true);
    const QStringList suites = parser.positionalArguments();
    if (suites.size() != 1)
        throw UsageError("expected one suite: ropescope bench geometry|live|model|attention|bias|positions|positions-memory [--json]");
    if (suites.first() == "geometry")
        return benchGeometry(parser);
    if (suites.first() == "live")
        return benchLive(parser);
    if (suites.first() == "model")
        return benchModel(parser);
    if (suites.first() == "attention")
        return benchAttention(parser);
    if (suites.first() == "bias")
        return benchBias(parser);
    if (suites.first() == "positions")
        return benchPositions(parser);
    if (suites.first() == "positions-memory")
        return benchPositionsMemory(parser);
    throw UsageError("unknown suite '" + suites.first().toStdString() +
                     "' (available: geometry, live, model, attention, bias, positions, positions-memory)");
}

} // namespace ropescope::cli
