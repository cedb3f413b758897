#include "core/model/analysis/attention_run.h"

#include <torch/types.h>
#include <QFileInfo>

#include "core/geometry/errors.h"
#include "core/model/engine/safetensors.h"

#include <algorithm>

namespace ropescope::model {
namespace {

std::optional<geometry::AgeSchedule> ageFor(const std::string& age, int layers)
{
    if (age.empty())
        return std::nullopt;
    try {
        return geometry::parseAgeSchedule(age, layers);
    } catch (const geometry::InvalidInput& e) {
        throw ModelError(e.what()); // "age: ..."
    }
}

// Every attention layer unless some are asked for (Qwen3.5's DeltaNet layers have no attention to keep).
std::vector<int> capturedLayers(const std::vector<int>& asked, const TextConfig& text)
{
    std::vector<int> out = asked.empty() ? text.attentionLayers() : asked;
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    if (out.front() < 0 || out.back() >= text.layers)
        throw ModelError("capture layers: expected 0.." + std::to_string(text.layers - 1));
    for (int l : out)
        if (text.isLinear(l))
            throw ModelError("capture layers: layer " + std::to_string(l) +
                             " is a Gated DeltaNet layer, with no attention and no positions; "
                             "the attention layers are " +
                             attentionLayerList(text));
    return out;
}

MapToken mapToken(const Tokenizer& tokenizer, int64_t id, int64_t index, bool answer)
{
    return {tokenizer.decode({id}, false), id, index, answer};
}

} // namespace

std::vector<MapToken> AttentionRun::mapTokens() const
{
    std::vector<MapToken> tokens = questionTokens;
    if (!answerAttention.empty())
        tokens.insert(tokens.end(), answerTokens.begin(), answerTokens.end());
    return tokens;
}

size_t AttentionRun::captured(int layer) const
{
    const auto at = std::find(layers.begin(), layers.end(), layer);
    if (at == layers.end())
        throw std::invalid_argument("layer " + std::to_string(layer) + " is not captured");
    return static_cast<size_t>(at - layers.begin());
}

torch::Tensor AttentionRun::tokenAttention(size_t capturedIndex, const MapToken& token) const
{
    if (token.answer) {
        const auto k = std::find_if(answerTokens.begin(), answerTokens.end(), [&](const MapToken& t) { return t.index == token.index; });
        if (k == answerTokens.end() || answerAttention.empty())
            throw std::invalid_argument("no map kept for answer token " + std::to_string(token.index));
        return answerAttention.at(capturedIndex).narrow(1, k - answerTokens.begin(), 1);
    }
    const auto& rows = prompt.queryTokens;
    const auto q = std::find(rows.begin(), rows.end(), token.index);
    if (q == rows.end())
        throw std::invalid_argument("token " + std::to_string(token.index) + " is not a question token");
    return attention().at(capturedIndex).narrow(1, q - rows.begin(), 1);
}

torch::Tensor AttentionRun::tokenMask(size_t capturedIndex, const MapToken& token) const
{
    const std::vector<MapToken>& tokens = token.answer ? answerTokens : questionTokens;
    const auto k = std::find_if(tokens.begin(), tokens.end(), [&](const MapToken& t) { return t.index == token.index; });
    const std::vector<at::Tensor>& codes = token.answer ? masks.answer : masks.question;
    if (k == tokens.end() || capturedIndex >= codes.size() || k - tokens.begin() >= codes[capturedIndex].size(0))
        throw std::invalid_argument("no mask kept for token " + std::to_string(token.index));
    return codes[capturedIndex][k - tokens.begin()];
}

ResolvedScheme resolveScheme(const ModelBundle& model, const std::optional<ModelScheme>& scheme)
{
    const QString& modelDir = model.dir;
    const int layers = model.vlm->config().text.layers;
    ResolvedScheme r;
    r.own = model.own;
    // A model trained with a scheme file runs under it only when the user names that file (its code runs
    // only then): the named file, when its content is the recorded one, stands for the recorded scheme.
    if (auto& recorded = r.own.params.custom; recorded && !recorded->scheme) {
        const auto& named = scheme ? scheme->params.custom : std::nullopt;
        if (named && named->scheme && named->sha256 == recorded->sha256)
            recorded->scheme = named->scheme;
        else if (!scheme)
            throw ModelError(QFileInfo(modelDir).fileName().toStdString() + " was trained with the scheme file " + recorded->file +
                             " (sha256 " + recorded->sha256.substr(0, 12) + "...): name that file with --scheme to run the model under it");
    }
    r.scheme = scheme.value_or(r.own);
    r.age = ageFor(r.scheme.age, layers);
    r.ownAge = ageFor(r.own.age, layers);
    r.untrained = schemeDifference(r.scheme, r.own, layers);
    return r;
}

AttentionRun runAttention(const ModelBundle& model, const AttentionQuery& query)
{
    return runAttention(*model.vlm, *model.tokenizer, query, resolveScheme(model, query.scheme));
}

AttentionRun runAttention(Vlm& vlm, const Tokenizer& tokenizer, const AttentionQuery& query, const ResolvedScheme& scheme)
{
    const ModelConfig& cfg = vlm.config();
    AttentionRun run;
    run.prompt = prepareAttention(vlm, tokenizer, query.images, query.question, query.preprocess, vlm.device());
    if (run.prompt.queryTokens.empty())
        throw ModelError("the question is empty: there is no text after the image to attend from");
    run.scheme = scheme.scheme;
    run.own = scheme.own;
    run.layers = capturedLayers(query.layers, cfg.text);
    run.untrained = scheme.untrained;

    ForwardRequest request = run.prompt.forward;
    request.scheme = run.scheme.params;
    request.age = scheme.age;
    request.capture.layers = run.layers;
    if (query.generate)
        request.generate = std::max(1, *query.generate);
    request.captureSteps = query.answerMaps;
    request.capture.meanQueryKey = query.meanQueryKey;
    request.capture.routers = cfg.text.moe.any(); // [L, experts] per sparse layer: the expert-usage view's input
    run.result = vlm.run(request);
    if (query.compareOwn) { // the vision embeddings are cached: a second decoder pass only
        ForwardRequest own = request;
        own.scheme = run.own.params;
        own.age = scheme.ownAge;
        own.generate = 0;
        own.captureSteps = false;
        own.capture.meanQueryKey = false;
        run.ownResult = vlm.run(own);
    }

    const torch::Tensor ids = run.result.generatedIds;
    run.generated.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel());
    run.answer = answerText(tokenizer, run.generated, cfg.eos);
    for (int64_t index : run.prompt.queryTokens)
        run.questionTokens.push_back(mapToken(tokenizer, run.prompt.ids[static_cast<size_t>(index)], index, false));
    const int64_t promptLength = static_cast<int64_t>(run.prompt.ids.size());
    for (size_t k = 0; k < run.generated.size(); ++k) {
        const int64_t id = run.generated[k];
        if (endsTurn(tokenizer, id, cfg.eos))
            break;
        run.answerTokens.push_back(mapToken(tokenizer, id, promptLength + static_cast<int64_t>(k), true));
    }
    if (query.answerMaps && !run.answerTokens.empty()) {
        // Answer token 0 came from the prompt's last row (a question row); token k > 0 from step k - 1.
        const int64_t answers = static_cast<int64_t>(run.answerTokens.size());
        for (size_t c = 0; c < run.layers.size(); ++c) {
            const torch::Tensor& prompt = run.attention()[c];
            torch::Tensor rows = prompt.narrow(1, prompt.size(1) - 1, 1);
            if (answers > 1)
                rows = torch::cat({rows, run.result.stepAttentions.at(c).narrow(1, 0, answers - 1)}, 1);
            run.answerAttention.push_back(rows);
        }
    }
    for (int layer : run.layers)
        run.layerKinds.push_back(layerMaskKind(cfg.text, layer));
    run.masks = runMasks(cfg, run);
    return run;
}

} // namespace ropescope::model
