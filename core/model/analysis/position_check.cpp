#include "core/model/analysis/position_check.h"

#include "core/geometry/layout.h"
#include "core/geometry/position_table.h"
#include "core/geometry/scheme.h"
#include "core/model/engine/safetensors.h"
#include "core/model/engine/token_layout.h"

#include "core/io/input_file.h"

#include <QDir>
#include <QJsonArray>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace ropescope::model {
namespace {

const QStringList kFamilies{"qwen2-vl", "qwen2.5-vl", "qwen3-vl", "qwen3.5", "glm-v", "paddleocr-vl"};
// Stand-ins for the vision tokens of the families found by mm_token_type_ids (no real id is negative).
constexpr int kTypedImage = -1001, kTypedVideo = -1002;

[[noreturn]] void bad(const DumpBatch& batch, const std::string& what)
{
    throw BadInputFile(batch.name.toStdString() + ": " + what);
}

const DumpTensor* find(const DumpBatch& batch, const char* name)
{
    const auto it = batch.tensors.find(name);
    return it == batch.tensors.end() ? nullptr : &it->second;
}

const DumpTensor& need(const DumpBatch& batch, const char* name)
{
    const DumpTensor* t = find(batch, name);
    if (!t)
        bad(batch,
            std::string("no '") + name + "' (a dump holds input_ids, attention_mask, image_grid_thw / video_grid_thw and position_ids)");
    return *t;
}

void needIntegral(const DumpBatch& batch, const char* name, const DumpTensor& t)
{
    if (!t.integral)
        bad(batch, std::string("'") + name + "' holds numbers that are not whole");
}

// The rows of an [N, 3] grid tensor (absent: none).
std::vector<Grid> gridRows(const DumpBatch& batch, const char* name)
{
    const DumpTensor* t = find(batch, name);
    if (!t)
        return {};
    needIntegral(batch, name, *t);
    if (t->shape.size() != 2 || t->shape[1] != 3)
        bad(batch, std::string("'") + name + "' must be [N, 3] (t, h, w per image or video)");
    std::vector<Grid> rows;
    for (int64_t r = 0; r < t->shape[0]; ++r) {
        const Grid g{t->ints[static_cast<size_t>(3 * r)], t->ints[static_cast<size_t>(3 * r + 1)], t->ints[static_cast<size_t>(3 * r + 2)]};
        for (int64_t v : g)
            if (v < 1 || v > (int64_t(1) << 20))
                bad(batch, std::string("'") + name + "' row " + std::to_string(r) + " is not a grid (each of t, h, w 1..2^20)");
        rows.push_back(g);
    }
    return rows;
}

// Runs of `token` in `ids` (a run is a maximal stretch of that id).
int64_t runsOf(const std::vector<int64_t>& ids, int64_t token)
{
    int64_t runs = 0;
    for (size_t i = 0; i < ids.size(); ++i)
        runs += ids[i] == token && (i == 0 || ids[i - 1] != token);
    return runs;
}

} // namespace

int64_t DumpTensor::numel() const
{
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

std::optional<PositionRule> ruleForFamily(const QString& name)
{
    PositionRule r;
    r.family = name;
    r.config.vision.tokensPerSecond = 2; // Qwen2.5-VL's; the Hub's ids (151652, 151655, 151656) and merge size 2
    if (name == "qwen2-vl")
        r.config.architecture = Architecture::Qwen2VL;
    else if (name == "qwen2.5-vl")
        r.config.architecture = Architecture::Qwen25VL;
    else if (name == "qwen3-vl")
        r.config.architecture = Architecture::Qwen3VL;
    else if (name == "qwen3.5")
        r.config.architecture = Architecture::Qwen35;
    else if (name == "glm-v" || name == "paddleocr-vl") {
        r.config.architecture = name == "glm-v" ? Architecture::GlmV : Architecture::Qwen3VL; // one run per video frame, t at its start
        r.config.imageToken = kTypedImage;
        r.config.videoToken = kTypedVideo;
        r.byTokenTypes = true;
    } else
        return std::nullopt;
    return r;
}

PositionRule ruleForModel(const QString& modelDir)
{
    const QString path = QDir(modelDir).filePath("config.json");
    QJsonObject json;
    try {
        json = io::readJsonObjectFile(path, 16 << 20, "model config");
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
    const QString type = json.value("model_type").toString();
    if (type == "glm4v" || type == "glm46v" || type == "glm4v_moe")
        return *ruleForFamily("glm-v");
    if (type == "paddleocr_vl")
        return *ruleForFamily("paddleocr-vl");
    PositionRule r;
    r.config = loadModelConfig(path); // the Qwen families, with the folder's own token ids
    static const std::map<Architecture, QString> names{{Architecture::Qwen2VL, "qwen2-vl"},
                                                       {Architecture::Qwen25VL, "qwen2.5-vl"},
                                                       {Architecture::Qwen3VL, "qwen3-vl"},
                                                       {Architecture::Qwen35, "qwen3.5"}};
    r.family = names.at(r.config.architecture);
    return r;
}

QString familyNames()
{
    return kFamilies.join(", ");
}

const char* faultKindName(FaultKind kind)
{
    switch (kind) {
    case FaultKind::None: return "none";
    case FaultKind::OneD: return "1-d";
    case FaultKind::Temporal: return "temporal";
    case FaultKind::Offset: return "offset";
    case FaultKind::RopeDeltas: return "rope-deltas";
    case FaultKind::Other: return "other";
    }
    return "?";
}

const char* faultKindWords(FaultKind kind)
{
    switch (kind) {
    case FaultKind::None: return "matches the family's rule";
    case FaultKind::OneD: return "1-D positions: t, h and w are equal everywhere, so images get no 2-D (3-D) positions";
    case FaultKind::Temporal: return "temporal ids: a video's t is wrong (constant within the video, or stepping by the wrong interval)";
    case FaultKind::Offset: return "every position is off by the same amount: padding counted into the positions (a left-padded batch?)";
    case FaultKind::RopeDeltas: return "the positions match but rope_deltas does not (max position + 1 - sequence length)";
    case FaultKind::Other: return "the positions differ from the family's rule";
    }
    return "?";
}

void checkBatchEach(const DumpBatch& batch, const PositionRule& rule, bool keepPositions, const std::function<void(SampleCheck&&)>& each)
{
    const ModelConfig& config = rule.config;
    const DumpTensor& ids = need(batch, "input_ids");
    const DumpTensor& pos = need(batch, "position_ids");
    needIntegral(batch, "input_ids", ids);
    needIntegral(batch, "position_ids", pos);
    if (ids.shape.size() != 2 || ids.shape[0] < 1 || ids.shape[1] < 1)
        bad(batch, "'input_ids' must be [B, L]");
    const int64_t rows = ids.shape[0], length = ids.shape[1];
    for (int64_t id : ids.ints) // a typed family's vocabulary is not known here: only negative ids are impossible
        if (id < 0 || (!rule.byTokenTypes && id >= config.text.vocab))
            bad(batch,
                "'input_ids' holds " + std::to_string(id) + ", outside the vocabulary (0.." + std::to_string(config.text.vocab - 1) + ")");
    if (pos.shape.size() != 3 || (pos.shape[0] != 3 && pos.shape[0] != 4) || pos.shape[1] != rows || pos.shape[2] != length)
        bad(batch,
            "'position_ids' must be [3, B, L] or [4, B, L] with input_ids' B = " + std::to_string(rows) +
                " and L = " + std::to_string(length));
    const int axisBase = pos.shape[0] == 4 ? 1 : 0; // [4, B, L]: row 0 is the text position, then t, h, w
    const DumpTensor* mask = find(batch, "attention_mask");
    if (mask && (mask->shape != ids.shape || !mask->integral))
        bad(batch, "'attention_mask' must be [B, L] of 0 and 1, as input_ids");
    const DumpTensor* deltas = find(batch, "rope_deltas");
    if (deltas && (deltas->numel() != rows || !deltas->integral))
        bad(batch, "'rope_deltas' must hold one whole number per sample ([B, 1])");
    const std::vector<Grid> images = gridRows(batch, "image_grid_thw"), videos = gridRows(batch, "video_grid_thw");
    const DumpTensor* seconds = find(batch, "second_per_grid_ts");
    if (seconds && seconds->numel() != static_cast<int64_t>(videos.size()))
        bad(batch, "'second_per_grid_ts' must hold one number per video_grid_thw row");
    if (seconds)
        for (size_t k = 0; k < static_cast<size_t>(seconds->numel()); ++k)
            if (const double s = seconds->real(k); !std::isfinite(s) || s < 0 || s > 1e6)
                bad(batch, "'second_per_grid_ts' holds a value outside 0..1e6");

    const DumpTensor* types = find(batch, "mm_token_type_ids");
    if (rule.byTokenTypes && !types)
        bad(batch,
            "no 'mm_token_type_ids': " + rule.family.toStdString() +
                " finds its image and video tokens by it (1 image, 2 video); "
                "without it transformers silently falls back to 1-D positions");
    if (types && (types->shape != ids.shape || !types->integral))
        bad(batch, "'mm_token_type_ids' must be [B, L] of whole numbers, as input_ids");

    size_t nextImage = 0, nextVideo = 0;
    const bool splitVideos = separatesVideoFrames(config.architecture);
    for (int64_t b = 0; b < rows; ++b) {
        SampleCheck c;
        c.batch = batch.name;
        c.row = static_cast<int>(b);
        std::vector<int64_t> kept, where;
        for (int64_t i = 0; i < length; ++i) {
            const size_t at = static_cast<size_t>(b * length + i);
            if (mask && mask->ints[at] != 0 && mask->ints[at] != 1)
                bad(batch, "'attention_mask' holds values other than 0 and 1");
            if (mask && mask->ints[at] == 0)
                continue;
            if (rule.byTokenTypes) {
                const int64_t type = types->ints[at];
                if (type < 0 || type > 2)
                    bad(batch, "'mm_token_type_ids' holds " + std::to_string(type) + " (0 text, 1 image, 2 video)");
                kept.push_back(type == 1 ? kTypedImage : type == 2 ? kTypedVideo : 0);
            } else {
                kept.push_back(ids.ints[at]);
            }
            where.push_back(i);
        }
        c.tokens = static_cast<int64_t>(kept.size());
        // This sample's grids, in the batch's order (the processor flattens them over the batch).
        const int64_t imageRuns = runsOf(kept, config.imageToken), videoRuns = runsOf(kept, config.videoToken);
        if (nextImage + static_cast<size_t>(imageRuns) > images.size())
            bad(batch, "sample " + std::to_string(b) + " has more image token runs than image_grid_thw has rows left");
        std::vector<Grid> sampleImages(images.begin() + static_cast<std::ptrdiff_t>(nextImage),
                                       images.begin() + static_cast<std::ptrdiff_t>(nextImage + static_cast<size_t>(imageRuns)));
        nextImage += static_cast<size_t>(imageRuns);
        std::vector<Grid> sampleVideos;
        std::vector<size_t> videoRowsUsed;
        for (int64_t runs = 0; runs < videoRuns;) {
            if (nextVideo >= videos.size())
                bad(batch, "sample " + std::to_string(b) + " has more video token runs than video_grid_thw has rows left");
            sampleVideos.push_back(videos[nextVideo]);
            videoRowsUsed.push_back(nextVideo);
            runs += splitVideos ? videos[nextVideo][0] : 1; // Qwen3-VL: one run per temporal patch
            ++nextVideo;
        }
        geometry::SchemeParams params;
        params.kind = geometry::SchemeKind::Mrope;
        if (config.architecture == Architecture::Qwen25VL) {
            params.temporal.mode = geometry::TemporalParams::Mode::Qwen25VL;
            params.temporal.tokensPerSecond = config.vision.tokensPerSecond;
            std::set<double> given;
            for (size_t r : videoRowsUsed)
                given.insert(seconds ? seconds->real(r) : 1.0);
            if (given.size() > 1)
                bad(batch,
                    "sample " + std::to_string(b) + ": its videos have different second_per_grid_ts, which this check does not model yet");
            if (!given.empty())
                params.temporal.secondPerGrid = *given.begin();
        }
        geometry::PositionTable table;
        try {
            table = geometry::buildPositionTable(layoutFromTokens(kept, sampleImages, sampleVideos, config), params);
        } catch (const std::exception& e) {
            bad(batch, "sample " + std::to_string(b) + ": " + e.what());
        }
        // Segment names per token: text, image k, video k frame f.
        int imageIndex = 0, frameOfVideo = 0;
        size_t videoIndex = 0;
        for (const geometry::Segment& s : table.layout.segments) {
            const int64_t n = s.tokenCount();
            QString name;
            if (s.kind == geometry::SegmentKind::Text) {
                name = "text";
            } else if (s.kind == geometry::SegmentKind::Image) {
                name = QString("image %1").arg(imageIndex++);
            } else {
                const size_t row = videoIndex < videoRowsUsed.size() ? videoRowsUsed[videoIndex] : 0;
                if (splitVideos) {
                    name = QString("video %1 frame %2").arg(row).arg(frameOfVideo);
                    if (++frameOfVideo >= sampleVideos[videoIndex][0]) {
                        frameOfVideo = 0;
                        ++videoIndex;
                    }
                } else {
                    name = QString("video %1").arg(row);
                    ++videoIndex;
                }
            }
            for (int64_t k = 0; k < n; ++k)
                c.segments.push_back(name);
        }
        // Compare, axis by axis.
        const int64_t n = c.tokens;
        c.gotPositions.resize(static_cast<size_t>(3 * n));
        c.expectedPositions.resize(static_cast<size_t>(3 * n));
        bool sameEverywhere = true, expectedSame = true;
        std::set<int64_t> offsets;
        int64_t maxExpected = 0;
        for (int64_t k = 0; k < n; ++k) {
            bool differs = false;
            for (int a = 0; a < 3; ++a) {
                const int64_t got = pos.ints[static_cast<size_t>(((axisBase + a) * rows + b) * length + where[static_cast<size_t>(k)])];
                const auto expected = static_cast<int64_t>(std::llround(table.positions(k, a)));
                c.gotPositions[static_cast<size_t>(a * n + k)] = got;
                c.expectedPositions[static_cast<size_t>(a * n + k)] = expected;
                maxExpected = std::max(maxExpected, expected);
                offsets.insert(got - expected);
                if (got != expected) {
                    differs = true;
                    if (c.firstToken < 0) {
                        c.firstToken = where[static_cast<size_t>(k)];
                        c.axis = a;
                        c.got = got;
                        c.expected = expected;
                        c.segment = c.segments[static_cast<size_t>(k)];
                    }
                }
            }
            c.differing += differs;
            sameEverywhere = sameEverywhere && c.gotPositions[static_cast<size_t>(k)] == c.gotPositions[static_cast<size_t>(n + k)] &&
                c.gotPositions[static_cast<size_t>(k)] == c.gotPositions[static_cast<size_t>(2 * n + k)];
            expectedSame = expectedSame && table.positions(k, 0) == table.positions(k, 1) && table.positions(k, 0) == table.positions(k, 2);
        }
        if (axisBase == 1) // the text row of a [4, B, L] table: 0, 1, 2, ... over the attended tokens
            for (int64_t k = 0; k < n && c.firstToken < 0; ++k) {
                const int64_t got = pos.ints[static_cast<size_t>(b * length + where[static_cast<size_t>(k)])];
                if (got != k) {
                    c.firstToken = where[static_cast<size_t>(k)];
                    c.axis = 3;
                    c.got = got;
                    c.expected = k;
                    c.segment = c.segments[static_cast<size_t>(k)];
                    c.differing = 1;
                }
            }
        if (c.firstToken >= 0) {
            if (c.axis == 3) {
                c.kind = FaultKind::Other;
                c.detail = "the text row (row 0 of a [4, B, L] table) is not 0, 1, 2, ... over the attended tokens";
            } else if (sameEverywhere && !expectedSame) {
                c.kind = FaultKind::OneD;
                c.detail = QString("t = h = w on all %1 tokens").arg(n);
            } else if (offsets.size() == 1 && *offsets.begin() != 0) {
                c.kind = FaultKind::Offset;
                c.detail = QString("every position is %1 %2 the rule's")
                               .arg(std::abs(*offsets.begin()))
                               .arg(*offsets.begin() > 0 ? "above" : "below");
            } else if (c.segment.startsWith("video") && c.axis == 0) {
                c.kind = FaultKind::Temporal;
                // Within the first differing video: the t values it got, frame by frame, against the rule's.
                std::vector<int64_t> gotT, expectedT;
                for (int64_t k = 0; k < n; ++k)
                    if (c.segments[static_cast<size_t>(k)].section(' ', 0, 1) == c.segment.section(' ', 0, 1)) {
                        const int64_t g = c.gotPositions[static_cast<size_t>(k)], e = c.expectedPositions[static_cast<size_t>(k)];
                        if (expectedT.empty() || e != expectedT.back()) {
                            expectedT.push_back(e);
                            gotT.push_back(g);
                        }
                    }
                const bool constant = std::all_of(gotT.begin(), gotT.end(), [&](int64_t g) { return g == gotT.front(); });
                const int64_t gotStep = gotT.size() > 1 ? gotT[1] - gotT[0] : 0,
                              expectedStep = expectedT.size() > 1 ? expectedT[1] - expectedT[0] : 0;
                c.detail = constant && expectedT.size() > 1 ? QString("t is constant within %1; the rule steps it by %2 a frame")
                                                                  .arg(c.segment.section(' ', 0, 1))
                                                                  .arg(expectedStep)
                                                            : QString("t steps by %1 a frame in %2; the rule steps it by %3")
                                                                  .arg(gotStep)
                                                                  .arg(c.segment.section(' ', 0, 1))
                                                                  .arg(expectedStep);
            } else {
                c.kind = FaultKind::Other;
                c.detail = QString("%1 of %2 tokens differ").arg(c.differing).arg(n);
            }
        } else if (deltas) {
            const int64_t expectedDelta = maxExpected + 1 - length, got = deltas->ints[static_cast<size_t>(b)];
            if (got != expectedDelta) {
                c.kind = FaultKind::RopeDeltas;
                c.got = got;
                c.expected = expectedDelta;
                c.detail = QString("rope_deltas %1, the positions give %2").arg(got).arg(expectedDelta);
            }
        }
        if (keepPositions)
            c.layout = table.layout.toString();
        if (!keepPositions) { // freed, not cleared: clear() keeps the capacity
            std::vector<int64_t>().swap(c.gotPositions);
            std::vector<int64_t>().swap(c.expectedPositions);
            std::vector<QString>().swap(c.segments);
        }
        each(std::move(c));
    }
    if (nextImage != images.size() || nextVideo != videos.size())
        bad(batch,
            (QString("image_grid_thw has %1 rows and video_grid_thw %2, but input_ids has %3 image and %4 video token runs ")
                 .arg(images.size())
                 .arg(videos.size())
                 .arg(nextImage)
                 .arg(nextVideo) +
             (rule.byTokenTypes ? QString("(by mm_token_type_ids)")
                                : QString("(image id %1, video id %2): another family's token ids? --model DIR reads the model's own")
                                      .arg(config.imageToken)
                                      .arg(config.videoToken)))
                .toStdString());
}

std::vector<SampleCheck> checkBatch(const DumpBatch& batch, const PositionRule& rule, bool keepPositions)
{
    std::vector<SampleCheck> out;
    checkBatchEach(batch, rule, keepPositions, [&](SampleCheck&& c) { out.push_back(std::move(c)); });
    return out;
}

geometry::PositionTable pipelineTable(const SampleCheck& c)
{
    geometry::PositionTable t = geometry::tokenMetadata(geometry::parseLayout(c.layout));
    if (static_cast<int64_t>(t.size()) != c.tokens || static_cast<int64_t>(c.gotPositions.size()) != 3 * c.tokens)
        throw ModelError("the sample's positions were not kept");
    t.customScheme = "pipeline";
    t.customComponents = {"t", "h", "w"};
    t.positions.resize(c.tokens, 3);
    for (int a = 0; a < 3; ++a)
        for (int64_t k = 0; k < c.tokens; ++k)
            t.positions(k, a) = static_cast<double>(c.gotPositions[static_cast<size_t>(a * c.tokens + k)]);
    return t;
}

QJsonObject sampleCheckJson(const SampleCheck& c)
{
    QJsonObject o{{"batch", c.batch},
                  {"row", c.row},
                  {"tokens", static_cast<double>(c.tokens)},
                  {"matches", c.kind == FaultKind::None},
                  {"kind", faultKindName(c.kind)}};
    if (c.kind == FaultKind::None)
        return o;
    o["detail"] = c.detail;
    if (c.firstToken >= 0) {
        static const char* axes[] = {"t", "h", "w", "text"};
        o["first_token"] = static_cast<double>(c.firstToken);
        o["axis"] = axes[c.axis];
        o["segment"] = c.segment;
        o["differing_tokens"] = static_cast<double>(c.differing);
    }
    o["got"] = static_cast<double>(c.got);
    o["expected"] = static_cast<double>(c.expected);
    return o;
}

} // namespace ropescope::model
