#include "core/positions/batch.h"

#include "core/geometry/scheme.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <set>
#include <utility>

namespace ropescope::positions {
namespace {

// Stand-ins for the vision tokens of the families found by mm_token_type_ids, and for XD-RoPE's video frames
// (image tokens after a video-start token); no real id is negative.
constexpr int64_t kTypedImage = -1001, kTypedVideo = -1002, kXdFrame = -1003;

// The rows of an [N, 3] grid tensor (absent: none).
std::vector<Grid> gridRows(const Batch& batch, const IntView& t, const char* name)
{
    if (!t.given)
        return {};
    if (t.shape.size() != 2 || t.shape[1] != 3)
        batch.bad(std::string("'") + name + "' must be [N, 3] (t, h, w per image or video)");
    std::vector<Grid> rows;
    rows.reserve(static_cast<size_t>(t.shape[0]));
    for (int64_t r = 0; r < t.shape[0]; ++r) {
        const Grid g{t[3 * r], t[3 * r + 1], t[3 * r + 2]};
        for (int64_t v : g)
            if (v < 1 || v > (int64_t(1) << 20))
                batch.bad(std::string("'") + name + "' row " + std::to_string(r) + " is not a grid (each of t, h, w 1..2^20)");
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

void Batch::bad(const std::string& what) const
{
    throw BadBatch(name.empty() ? what : name + ": " + what);
}

namespace {

// input_ids [B, L] of ids the vocabulary can hold, and attention_mask of the same shape.
void checkTokenIds(const Batch& batch, const FamilyRule& rule)
{
    const IntView& ids = batch.inputIds;
    if (!ids.given)
        batch.bad("no 'input_ids'");
    if (ids.shape.size() != 2 || ids.shape[0] < 1 || ids.shape[1] < 1)
        batch.bad("'input_ids' must be [B, L]");
    const int64_t rows = ids.shape[0], length = ids.shape[1];
    // A typed family's vocabulary, or one not given, is not known here: then only negative ids are impossible.
    const bool vocabKnown = !rule.byTokenTypes && rule.vocab > 0;
    for (int64_t i = 0; i < rows * length; ++i)
        if (ids[i] < 0 || (vocabKnown && ids[i] >= rule.vocab))
            batch.bad("'input_ids' holds " + std::to_string(ids[i]) +
                      (vocabKnown ? ", outside the vocabulary (0.." + std::to_string(rule.vocab - 1) + ")"
                                  : std::string(": token ids are never negative")));
    const IntView& mask = batch.attentionMask;
    if (mask.given && mask.shape != ids.shape)
        batch.bad("'attention_mask' must be [B, L] of 0 and 1, as input_ids");
}

// second_per_grid_ts (one finite number per video) and mm_token_type_ids where the family finds its tokens by them.
void checkSecondsAndTypes(const Batch& batch, const FamilyRule& rule, size_t videos)
{
    const RealView& seconds = batch.secondPerGrid;
    if (seconds.given && seconds.numel() != static_cast<int64_t>(videos))
        batch.bad("'second_per_grid_ts' must hold one number per video_grid_thw row");
    for (int64_t i = 0; seconds.given && i < seconds.numel(); ++i)
        if (!std::isfinite(seconds[i]) || seconds[i] < 0 || seconds[i] > 1e6)
            batch.bad("'second_per_grid_ts' holds a value outside 0..1e6");
    const IntView& types = batch.tokenTypes;
    if (rule.byTokenTypes && !types.given)
        batch.bad("no 'mm_token_type_ids': " + rule.family +
                  " finds its image and video tokens by it (1 image, 2 video); "
                  "without it transformers silently falls back to 1-D positions");
    if (types.given && types.shape != batch.inputIds.shape)
        batch.bad("'mm_token_type_ids' must be [B, L] of whole numbers, as input_ids");
}

// The token ids layoutFromTokens reads: typed families' and XD-RoPE's vision tokens become their stand-ins.
TokenRule tokenRuleFor(const FamilyRule& rule)
{
    TokenRule tokens;
    tokens.imageToken = rule.byTokenTypes ? kTypedImage : rule.imageToken;
    tokens.videoToken = rule.byTokenTypes ? kTypedVideo : rule.videoToken;
    tokens.mergeSize = rule.mergeSize;
    tokens.splitVideoFrames = rule.splitVideoFrames;
    tokens.temporalMerge = rule.temporalMerge;
    if (rule.placement == Placement::XdRope) {
        tokens.videoToken = kXdFrame;
        tokens.xdSpans = true;
    }
    return tokens;
}

// Row b's attended tokens: their indices into `where` and their ids (as tokenRuleFor reads them) into `kept`.
void attendedTokens(const Batch& batch, const FamilyRule& rule, int64_t b, std::vector<int64_t>& where, std::vector<int64_t>& kept)
{
    const IntView &ids = batch.inputIds, &mask = batch.attentionMask, &types = batch.tokenTypes;
    const int64_t length = ids.shape[1];
    const bool xd = rule.placement == Placement::XdRope;
    where.clear();
    kept.clear();
    bool insideVideo = false; // XD-RoPE: between a video-start and a video-end token
    for (int64_t i = 0; i < length; ++i) {
        const int64_t at = b * length + i;
        if (mask.given && mask[at] != 0 && mask[at] != 1)
            batch.bad("'attention_mask' holds values other than 0 and 1");
        if (mask.given && mask[at] == 0)
            continue;
        if (rule.byTokenTypes) {
            const int64_t type = types[at];
            if (type < 0 || type > 2)
                batch.bad("'mm_token_type_ids' holds " + std::to_string(type) + " (0 text, 1 image, 2 video)");
            kept.push_back(type == 1 ? kTypedImage : type == 2 ? kTypedVideo : 0);
        } else if (xd) {
            // As vLLM reads a HunyuanVL prompt: image tokens inside a video are its frames (and a config's own
            // video token, where it has one, is one too).
            const int64_t id = ids[at];
            insideVideo = id == rule.videoStartToken ? true : id == rule.videoEndToken ? false : insideVideo;
            kept.push_back((id == rule.imageToken && insideVideo) || (rule.videoToken >= 0 && id == rule.videoToken) ? kXdFrame : id);
        } else {
            kept.push_back(ids[at]);
        }
        where.push_back(i);
    }
}

// The family's placement as scheme parameters for sample s (row b): its scheme, video form and seconds per grid.
geometry::SchemeParams schemeFor(const Batch& batch, const FamilyRule& rule, const SamplePositions& s, int64_t b)
{
    const bool xd = rule.placement == Placement::XdRope;
    geometry::SchemeParams params;
    params.kind = rule.placement == Placement::ErnieVl ? geometry::SchemeKind::ErnieVl
        : xd                                           ? geometry::SchemeKind::XdRope
                                                       : geometry::SchemeKind::Mrope;
    if (rule.placement != Placement::Mrope) // ERNIE's video is one span; XD-RoPE's frames are runs already
        params.videoForm = xd ? geometry::VideoForm::Split : geometry::VideoForm::Grid;
    if (rule.secondsTemporal) {
        const RealView& seconds = batch.secondPerGrid;
        params.temporal.mode = geometry::TemporalParams::Mode::Qwen25VL;
        params.temporal.tokensPerSecond = rule.tokensPerSecond;
        std::set<double> given;
        for (size_t r : s.videoRows)
            given.insert(seconds.given ? seconds[static_cast<int64_t>(r)] : 1.0);
        if (given.size() > 1)
            batch.bad("sample " + std::to_string(b) + ": its videos have different second_per_grid_ts, which this rule does not model yet");
        if (!given.empty())
            params.temporal.secondPerGrid = *given.begin();
    }
    return params;
}

// The sequential families (Gemma): no grids, which a batch of theirs never holds (one that does is another
// family's), and every attended token the next position: a hard (1-D) table over the layout that names the runs.
void forEachSequentialSample(const Batch& batch, const FamilyRule& rule, const std::function<void(const SamplePositions&)>& visit)
{
    const std::pair<const IntView*, const char*> grids[] = {{&batch.imageGrids, "image_grid_thw"}, {&batch.videoGrids, "video_grid_thw"}};
    for (const auto& [t, name] : grids)
        if (t->given)
            batch.bad(std::string("'") + name + "': " + rule.family +
                      " gives every token one sequential position and reads no grids: another family's batch?");
    if (batch.secondPerGrid.given)
        batch.bad("'second_per_grid_ts': " + rule.family + " gives every token one sequential position and reads no video timing");
    checkSecondsAndTypes(batch, rule, 0); // mm_token_type_ids' shape, when given
    const geometry::SchemeParams params = geometry::defaultSchemeParams(geometry::SchemeKind::Hard);
    SamplePositions s;
    for (int64_t b = 0; b < batch.inputIds.shape[0]; ++b) {
        s.row = b;
        attendedTokens(batch, rule, b, s.where, s.ids);
        try {
            s.table = geometry::buildPositionTable(sequentialLayout(s.ids, rule.imageToken, rule.videoToken), params);
        } catch (const std::bad_alloc&) {
            throw;
        } catch (const std::exception& e) {
            batch.bad("sample " + std::to_string(b) + ": " + e.what());
        }
        visit(s);
    }
}

} // namespace

void forEachSample(const Batch& batch, const FamilyRule& rule, const std::function<void(const SamplePositions&)>& visit)
{
    checkTokenIds(batch, rule);
    if (rule.placement == Placement::Sequential) {
        forEachSequentialSample(batch, rule, visit);
        return;
    }
    const std::vector<Grid> images = gridRows(batch, batch.imageGrids, "image_grid_thw"),
                            videos = gridRows(batch, batch.videoGrids, "video_grid_thw");
    checkSecondsAndTypes(batch, rule, videos.size());
    const int64_t rows = batch.inputIds.shape[0];
    const TokenRule tokens = tokenRuleFor(rule);
    size_t nextImage = 0, nextVideo = 0;
    SamplePositions s;
    std::vector<int64_t>& kept = s.ids;
    for (int64_t b = 0; b < rows; ++b) {
        s.row = b;
        attendedTokens(batch, rule, b, s.where, kept);
        // This sample's grids, in the batch's order (the processor flattens them over the batch).
        const int64_t imageRuns = runsOf(kept, tokens.imageToken), videoRuns = runsOf(kept, tokens.videoToken);
        if (nextImage + static_cast<size_t>(imageRuns) > images.size())
            batch.bad("sample " + std::to_string(b) + " has more image token runs than image_grid_thw has rows left");
        const std::vector<Grid> sampleImages(images.begin() + static_cast<std::ptrdiff_t>(nextImage),
                                             images.begin() + static_cast<std::ptrdiff_t>(nextImage + static_cast<size_t>(imageRuns)));
        nextImage += static_cast<size_t>(imageRuns);
        s.videos.clear();
        s.videoRows.clear();
        for (int64_t runs = 0; runs < videoRuns;) {
            if (nextVideo >= videos.size())
                batch.bad("sample " + std::to_string(b) + " has more video token runs than video_grid_thw has rows left");
            s.videos.push_back(videos[nextVideo]);
            s.videoRows.push_back(nextVideo);
            runs += rule.splitVideoFrames ? videos[nextVideo][0] : 1; // Qwen3-VL, XD-RoPE: one run per temporal patch
            ++nextVideo;
        }
        const geometry::SchemeParams params = schemeFor(batch, rule, s, b);
        try {
            s.table = geometry::buildPositionTable(layoutFromTokens(kept, sampleImages, s.videos, tokens), params);
        } catch (const std::bad_alloc&) {
            throw; // out of memory is not the input's fault: the caller's own error, not a BadBatch
        } catch (const std::exception& e) {
            batch.bad("sample " + std::to_string(b) + ": " + e.what());
        }
        visit(s);
    }
    if (nextImage != images.size() || nextVideo != videos.size())
        batch.bad("image_grid_thw has " + std::to_string(images.size()) + " rows and video_grid_thw " + std::to_string(videos.size()) +
                  ", but input_ids has " + std::to_string(nextImage) + " image and " + std::to_string(nextVideo) + " video token runs " +
                  (rule.byTokenTypes ? std::string("(by mm_token_type_ids)")
                                     : "(image id " + std::to_string(rule.imageToken) + ", video id " + std::to_string(rule.videoToken) +
                           "): another family's token ids? --model DIR reads the model's own"));
}

void ropeIndex(const Batch& batch, const FamilyRule& rule, int64_t* positionIds, int64_t* ropeDeltas)
{
    const int64_t rows = batch.inputIds.shape.size() == 2 ? batch.inputIds.shape[0] : 0, length = rows ? batch.inputIds.shape[1] : 0;
    const int components = rule.components();
    forEachSample(batch, rule, [&](const SamplePositions& s) {
        // transformers starts from ones and writes the attended tokens' positions over them.
        for (int a = 0; a < components; ++a)
            std::fill_n(positionIds + (a * rows + s.row) * length, length, int64_t(1));
        int64_t maxPosition = 0;
        const auto n = static_cast<int64_t>(s.where.size());
        for (int a = 0; a < components; ++a) {
            int64_t* out = positionIds + (a * rows + s.row) * length;
            const double* column = s.table.positions.col(a).data();
            for (int64_t k = 0; k < n; ++k) {
                const auto p = wholePosition(column[k]);
                out[s.where[static_cast<size_t>(k)]] = p;
                maxPosition = std::max(maxPosition, p);
            }
        }
        ropeDeltas[s.row] = maxPosition + 1 - length;
    });
}

} // namespace ropescope::positions
