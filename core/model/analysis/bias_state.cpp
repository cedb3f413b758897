#include "core/model/analysis/bias_state.h"

#include "core/io/input_file.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <string>

namespace ropescope::model {
namespace {

std::string settingsDifference(const BiasAccumulation& a, const BiasAccumulation& b)
{
    if (a.model != b.model)
        return "the model (" + a.model.toStdString() + " vs " + b.model.toStdString() + ")";
    if (a.source != b.source)
        return "the samples (" + a.source.toStdString() + " vs " + b.source.toStdString() + ")";
    if (a.schemes != b.schemes)
        return "the schemes (" + a.schemes.join(',').toStdString() + " vs " + b.schemes.join(',').toStdString() + ")";
    if (a.layers != b.layers)
        return "the captured layers";
    if (a.rows != b.rows || a.cols != b.cols)
        return "the common grid";
    if (a.frames != b.frames)
        return "the common frame count";
    if (a.keepSamples != b.keepSamples)
        return "--keep-samples";
    if (a.total != b.total)
        return "the stream's sample count";
    return {};
}

} // namespace

const char* biasMapName(BiasMap map)
{
    return map == BiasMap::Question ? "question" : "answer";
}

void BiasAccumulation::reset()
{
    cells.assign(static_cast<size_t>(schemes.size()) * layers.size() * kBiasMaps, BiasCell{});
    for (BiasCell& c : cells) {
        c.mapSum.assign(static_cast<size_t>(rows) * static_cast<size_t>(cols), 0);
        c.frameSum.assign(static_cast<size_t>(frames), 0);
    }
    geometry.assign(static_cast<size_t>(schemes.size()), BiasGeometry{});
}

BiasCell& BiasAccumulation::cell(size_t scheme, size_t layer, BiasMap map)
{
    return cells.at((scheme * layers.size() + layer) * kBiasMaps + static_cast<size_t>(map));
}

const BiasCell& BiasAccumulation::cell(size_t scheme, size_t layer, BiasMap map) const
{
    return cells.at((scheme * layers.size() + layer) * kBiasMaps + static_cast<size_t>(map));
}

int64_t BiasAccumulation::sampleCount() const
{
    return cells.empty() ? 0 : static_cast<int64_t>(cells.front().samples.size());
}

void BiasAccumulation::merge(const BiasAccumulation& other)
{
    if (const std::string what = settingsDifference(*this, other); !what.empty())
        throw BadInputFile("--merge: the shards were measured with different settings: " + what);
    if (other.cells.size() != cells.size())
        throw BadInputFile("--merge: the shards hold different numbers of maps");
    std::vector<int64_t> mine, theirs;
    for (const BiasSampleStats& s : cells.front().samples)
        mine.push_back(s.sample);
    for (const BiasSampleStats& s : other.cells.front().samples)
        theirs.push_back(s.sample);
    std::sort(mine.begin(), mine.end());
    std::sort(theirs.begin(), theirs.end());
    std::vector<int64_t> both;
    std::set_intersection(mine.begin(), mine.end(), theirs.begin(), theirs.end(), std::back_inserter(both));
    if (!both.empty())
        throw BadInputFile("--merge: sample " + std::to_string(both.front()) + " was measured by two shards");
    for (size_t i = 0; i < cells.size(); ++i) {
        for (size_t k = 0; k < cells[i].mapSum.size(); ++k)
            if (__builtin_add_overflow(cells[i].mapSum[k], other.cells[i].mapSum[k], &cells[i].mapSum[k]))
                throw BadInputFile("--merge: the shards' map sums overflow (not states a measurement writes)");
        for (size_t k = 0; k < cells[i].frameSum.size(); ++k)
            if (__builtin_add_overflow(cells[i].frameSum[k], other.cells[i].frameSum[k], &cells[i].frameSum[k]))
                throw BadInputFile("--merge: the shards' frame sums overflow (not states a measurement writes)");
        // Samples (and their kept maps) in stream order, whichever shard measured them.
        std::vector<std::pair<BiasSampleStats, std::vector<double>>> joined;
        for (const BiasCell* c : std::initializer_list<const BiasCell*>{&cells[i], &other.cells[i]})
            for (size_t k = 0; k < c->samples.size(); ++k)
                joined.emplace_back(c->samples[k], k < c->sampleMaps.size() ? c->sampleMaps[k] : std::vector<double>{});
        std::sort(joined.begin(), joined.end(), [](const auto& a, const auto& b) { return a.first.sample < b.first.sample; });
        cells[i].samples.clear();
        cells[i].sampleMaps.clear();
        for (auto& [stats, map] : joined) {
            cells[i].samples.push_back(stats);
            if (keepSamples)
                cells[i].sampleMaps.push_back(std::move(map));
        }
    }
    for (size_t s = 0; s < geometry.size(); ++s)
        if (other.geometry[s].sample >= 0 && (geometry[s].sample < 0 || other.geometry[s].sample < geometry[s].sample))
            geometry[s] = other.geometry[s];
}

QJsonObject BiasAccumulation::toJson() const
{
    QJsonArray layerList, cellList, geometryList;
    for (int l : layers)
        layerList.append(l);
    for (const BiasCell& c : cells) {
        QJsonArray sums, frameSums, samples, kept;
        for (int64_t v : c.mapSum)
            sums.append(QString::number(v));
        for (int64_t v : c.frameSum)
            frameSums.append(QString::number(v));
        for (const BiasSampleStats& s : c.samples)
            samples.append(QJsonArray{QString::number(s.sample), s.centreRow, s.centreCol, s.firstRow, s.lastRow, s.firstCol, s.lastCol,
                                      s.distanceCorrelation, s.toLast, s.toFirst, s.toTextBefore, s.firstFrame, s.lastFrame});
        for (const std::vector<double>& map : c.sampleMaps) {
            QJsonArray values;
            for (double v : map)
                values.append(v);
            kept.append(values);
        }
        QJsonObject cell{{"map_sum", sums}, {"samples", samples}};
        if (frames > 0)
            cell["frame_sum"] = frameSums;
        if (keepSamples)
            cell["sample_maps"] = kept;
        cellList.append(cell);
    }
    for (const BiasGeometry& g : geometry) {
        QJsonArray ptd, spread;
        for (double v : g.ptd)
            ptd.append(v);
        for (double v : g.priorSpread)
            spread.append(v);
        geometryList.append(QJsonObject{{"sample", QString::number(g.sample)}, {"ptd", ptd}, {"prior_spread", spread}});
    }
    return QJsonObject{{"format", "ropescope bias state 1"},
                       {"model", model},
                       {"source", source},
                       {"schemes", QJsonArray::fromStringList(schemes)},
                       {"layers", layerList},
                       {"rows", rows},
                       {"cols", cols},
                       {"frames", frames},
                       {"keep_samples", keepSamples},
                       {"total", QString::number(total)},
                       {"cells", cellList},
                       {"geometry", geometryList}};
}

namespace {

// A cell of a state file holds what a measurement can produce: each sample's normalised map adds 2^40 in
// fixed point spread over non-negative cells, so the sums are non-negative and total about samples x 2^40;
// sample indices lie in the stream, each once; statistics are finite (a correlation may be undefined: NaN).
template <class Bad> void checkCell(const BiasAccumulation& a, const BiasCell& c, const Bad& bad)
{
    const auto checkSums = [&](const std::vector<int64_t>& sums, const char* what) {
        long double total = 0;
        for (int64_t v : sums) {
            if (v < 0)
                throw bad(std::string(what) + ": negative sum");
            total += static_cast<long double>(v);
        }
        if (total > (static_cast<long double>(c.samples.size()) + 1) * static_cast<long double>(kBiasFixedPoint) * 1.0001L)
            throw bad(std::string(what) + ": sums larger than " + std::to_string(c.samples.size()) + " samples can give");
    };
    checkSums(c.mapSum, "map sums");
    checkSums(c.frameSum, "frame sums");
    std::vector<int64_t> seen;
    for (const BiasSampleStats& s : c.samples) {
        if (s.sample < 0 || s.sample >= a.total)
            throw bad("sample " + std::to_string(s.sample) + " is outside the stream of " + std::to_string(a.total));
        seen.push_back(s.sample);
        for (double v : {s.centreRow, s.centreCol, s.firstRow, s.lastRow, s.firstCol, s.lastCol, s.toLast, s.toFirst, s.toTextBefore,
                         s.firstFrame, s.lastFrame})
            if (!std::isfinite(v))
                throw bad("sample " + std::to_string(s.sample) + ": statistics must be finite numbers");
        if (std::isinf(s.distanceCorrelation))
            throw bad("sample " + std::to_string(s.sample) + ": infinite correlation");
    }
    std::sort(seen.begin(), seen.end());
    if (std::adjacent_find(seen.begin(), seen.end()) != seen.end())
        throw bad("a sample listed twice");
    for (const std::vector<double>& map : c.sampleMaps)
        for (double v : map)
            if (!std::isfinite(v) || v < 0)
                throw bad("kept sample maps must be non-negative numbers");
}

} // namespace

BiasAccumulation BiasAccumulation::fromJson(const QJsonObject& json, const QString& name)
{
    const std::string where = name.toStdString();
    auto bad = [&](const std::string& what) { return BadInputFile(where + ": not a bias state file (" + what + ")"); };
    if (json["format"].toString() != "ropescope bias state 1")
        throw bad("no 'format': ropescope bias state 1");
    BiasAccumulation a;
    a.model = json["model"].toString();
    a.source = json["source"].toString();
    for (const QJsonValue& v : json["schemes"].toArray())
        a.schemes << v.toString();
    for (const QJsonValue& v : json["layers"].toArray())
        a.layers.push_back(v.toInt(-1));
    a.rows = json["rows"].toInt();
    a.cols = json["cols"].toInt();
    a.frames = json["frames"].toInt(0);
    a.keepSamples = json["keep_samples"].toBool(false);
    bool ok = false;
    a.total = json["total"].toString().toLongLong(&ok);
    // Everything declared is checked against what the file holds before anything is allocated: memory is
    // bounded by the document, never by the sizes it claims. Grid sizes in 64-bit (46341 x 46341 wraps an int).
    if (!ok || a.total < 0 || a.total > (int64_t(1) << 40))
        throw bad("'total' must be a sample count");
    if (a.schemes.isEmpty() || a.schemes.size() > 64)
        throw bad("1 to 64 schemes");
    if (a.layers.empty() || a.layers.size() > 1024)
        throw bad("1 to 1024 layers");
    for (size_t i = 0; i < a.layers.size(); ++i)
        if (a.layers[i] < 0 || a.layers[i] > 4096 || (i > 0 && a.layers[i] <= a.layers[i - 1]))
            throw bad("layers must be ascending indices");
    if (!json["rows"].isDouble() || !json["cols"].isDouble() || a.rows < 1 || a.cols < 1 ||
        int64_t(a.rows) * int64_t(a.cols) > (int64_t(1) << 20) || a.frames < 0 || a.frames > 4096)
        throw bad("grid: rows x cols at most 2^20, frames at most 4096");
    const QJsonArray cells = json["cells"].toArray();
    const int64_t cellCount = int64_t(a.schemes.size()) * int64_t(a.layers.size()) * kBiasMaps;
    if (cells.size() != cellCount)
        throw bad("cells: " + std::to_string(cells.size()) + " for " + std::to_string(cellCount) + " (schemes x layers x 2)");
    const int64_t gridCells = int64_t(a.rows) * int64_t(a.cols);
    for (const QJsonValue& c : cells) {
        const QJsonObject cell = c.toObject();
        if (cell["map_sum"].toArray().size() != gridCells || cell["frame_sum"].toArray().size() != a.frames)
            throw bad("map size");
    }
    a.reset();
    for (size_t i = 0; i < a.cells.size(); ++i) {
        const QJsonArray sums = cells[static_cast<qsizetype>(i)].toObject()["map_sum"].toArray();
        if (static_cast<size_t>(sums.size()) != a.cells[i].mapSum.size())
            throw bad("map size");
        for (size_t k = 0; k < a.cells[i].mapSum.size(); ++k) {
            a.cells[i].mapSum[k] = sums[static_cast<qsizetype>(k)].toString().toLongLong(&ok);
            if (!ok)
                throw bad("map sums");
        }
        const QJsonObject cell = cells[static_cast<qsizetype>(i)].toObject();
        const QJsonArray frameSums = cell["frame_sum"].toArray();
        if (static_cast<size_t>(frameSums.size()) != a.cells[i].frameSum.size())
            throw bad("frame sums");
        for (size_t k = 0; k < a.cells[i].frameSum.size(); ++k) {
            a.cells[i].frameSum[k] = frameSums[static_cast<qsizetype>(k)].toString().toLongLong(&ok);
            if (!ok)
                throw bad("frame sums");
        }
        const size_t keptSize = static_cast<size_t>(a.rows) * static_cast<size_t>(a.cols) + static_cast<size_t>(a.frames);
        for (const QJsonValue& v : cell["sample_maps"].toArray()) {
            const QJsonArray values = v.toArray();
            if (static_cast<size_t>(values.size()) != keptSize)
                throw bad("kept sample map size");
            std::vector<double> map;
            for (const QJsonValue& x : values)
                map.push_back(x.toDouble(NAN));
            a.cells[i].sampleMaps.push_back(std::move(map));
        }
        for (const QJsonValue& v : cell["samples"].toArray()) {
            const QJsonArray f = v.toArray();
            if (f.size() != 11 && f.size() != 13) // 11: written before videos were measured
                throw bad("sample stats");
            BiasSampleStats s;
            s.sample = f[0].toString().toLongLong(&ok);
            double* fields[] = {&s.centreRow, &s.centreCol,           &s.firstRow, &s.lastRow, &s.firstCol,
                                &s.lastCol,   &s.distanceCorrelation, &s.toLast,   &s.toFirst, &s.toTextBefore};
            for (int k = 0; k < 10; ++k)
                *fields[k] = f[k + 1].toDouble(NAN);
            if (f.size() == 13) {
                s.firstFrame = f[11].toDouble(NAN);
                s.lastFrame = f[12].toDouble(NAN);
            }
            if (!ok)
                throw bad("sample index");
            a.cells[i].samples.push_back(s);
        }
        if (a.keepSamples != (a.cells[i].sampleMaps.size() == a.cells[i].samples.size()) && !a.cells[i].samples.empty())
            throw bad("kept sample maps");
        checkCell(a, a.cells[i], bad);
    }
    for (const BiasCell& c : a.cells)
        if (c.samples.size() != a.cells.front().samples.size())
            throw bad("every map must hold the same samples");
    const QJsonArray geometry = json["geometry"].toArray();
    for (size_t s = 0; s < a.geometry.size() && s < static_cast<size_t>(geometry.size()); ++s) {
        const QJsonObject g = geometry[static_cast<qsizetype>(s)].toObject();
        a.geometry[s].sample = g["sample"].toString().toLongLong();
        for (const QJsonValue& v : g["ptd"].toArray())
            a.geometry[s].ptd.push_back(v.toDouble());
        for (const QJsonValue& v : g["prior_spread"].toArray())
            a.geometry[s].priorSpread.push_back(v.toDouble());
    }
    return a;
}

BiasAccumulation readBiasState(const QString& folder)
{
    const QString path = QDir(folder).filePath("bias_state.json");
    try {
        return BiasAccumulation::fromJson(io::readJsonObjectFile(path, int64_t(1) << 30, "bias state"), path);
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
}

bool holdsShard(const BiasAccumulation& a, int shard, int shards)
{
    if (a.cells.empty() || a.total < 1 || shards < 1 || shard < 0 || shard >= shards)
        return false;
    const std::vector<BiasSampleStats>& samples = a.cell(0, 0, BiasMap::Question).samples;
    const int64_t expected = a.total > shard ? (a.total - shard + shards - 1) / shards : 0;
    if (static_cast<int64_t>(samples.size()) != expected)
        return false;
    for (const BiasSampleStats& s : samples)
        if (s.sample < 0 || s.sample >= a.total || s.sample % shards != shard)
            return false;
    return true;
}

std::optional<BiasAccumulation> completeShardState(const QString& folder, int shard, int shards)
{
    if (!QFileInfo(QDir(folder).filePath("bias_state.json")).isFile())
        return std::nullopt;
    try {
        BiasAccumulation a = readBiasState(folder);
        if (holdsShard(a, shard, shards))
            return a;
    } catch (const std::exception&) { } // unreadable or foreign: not complete, so it is measured again
    return std::nullopt;
}

bool folderHoldsShard(const QString& folder, int shard, int shards)
{
    return completeShardState(folder, shard, shards).has_value();
}

} // namespace ropescope::model
