// Parity with Hugging Face transformers (eager, float32) on every family's tiny fixture in tests/data/fixtures
// (README there): one table-driven harness. A family is a row (its fixture, cases and tolerances); a tensor the
// fixtures record is a key with one producer of ours, so every key a case holds is compared wherever it appears,
// and a key the harness cannot produce is named in the log (never silently passed). Each run goes through the
// normal loader and model code with the model's own scheme (mrope, or glm-v for GLM-V).
//
// A row also holds what else is the family's own: its config read as transformers reads it (the fixture's and the
// Hub's), config values refused in one line naming the key, a run refused without mm_token_type_ids, and layouts
// whose built-in scheme gives the fixture's position_ids. A new family adds its row here and nowhere else.
// Older suites keep checks that are not a family's row: test_model_parity and test_qwen35_parity (the vision cache,
// the Gated DeltaNet's rule), test_moe (the MoE block, its kernels and the cores against rules written out).
#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

// moc reads none of these (it defines Q_MOC_RUN): the test class needs nothing from them, and reading LibTorch's
// headers through them took moc 4-29 s a suite.
#ifndef Q_MOC_RUN
#include "core/geometry/scheme.h"
#include "core/model/engine/attention_masks.h"
#include "core/model/engine/processor_inputs.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>

#include <functional>
#include <set>

#include "tests/support/family_fixtures.h"
#include "tests/support/parity.h"
#endif

using namespace ropescope;
using namespace ropescope::model;
using ropescope::test::configOf;
using ropescope::test::fixture;
using ropescope::test::refusal;
using ropescope::test::requestFor;
using ropescope::test::withTextKey;

namespace {

torch::Tensor positionsOf(const geometry::PositionTable& t)
{
    return torch::from_blob(const_cast<double*>(t.positions.data()), {t.components(), t.size()}, torch::kFloat64).to(torch::kInt64);
}

// The families' own config checks, each given its fixture's config.json as loaded.

// GLM-4.1V: the Hub's legacy rope keys at text_config level, folded as transformers 5 folds them.
void glm4vConfig(const ModelConfig& c)
{
    QCOMPARE(c.architecture, Architecture::GlmV);
    QCOMPARE(c.text.headDim(), 32);
    QCOMPARE(c.text.rotaryDim(), 16);
    QCOMPARE(c.text.ropeTheta, 1000.0);
    QCOMPARE(c.text.mropeSection, (std::vector<int>{2, 3, 3}));
    QCOMPARE(c.text.pairing, geometry::RotaryPairing::Adjacent);
    QVERIFY(c.text.sandwichNorms && c.text.fusedGateUp && c.text.attentionBias && !c.text.tieEmbeddings);
    QCOMPARE(c.vision.positionGridSide(), 4);
    QCOMPARE(c.vision.mlpHidden, 128);
    QCOMPARE(c.vision.mergerHidden, 96);
    QVERIFY(!c.vision.attentionBias);
    QCOMPARE(c.imageToken, 254);
    QCOMPARE(c.visionStart, 250);
    QCOMPARE(c.videoStart, 252);
    QCOMPARE(c.eos, 240);
    QCOMPARE(ownSchemeKind(c), geometry::SchemeKind::GlmV);
    // GLM-4.1V-9B's real shapes (resources/configs): a 24 x 24 table, 64 of 128 dims rotating.
    const ModelConfig hub = loadModelConfig(ROPESCOPE_TEST_DATA + "/../../resources/configs/glm4v-9b.json");
    QCOMPARE(hub.vision.positionEmbeddings, 576);
    QCOMPARE(hub.text.rotaryDim(), 64);
    QCOMPARE(hub.text.mropeSection, (std::vector<int>{8, 12, 12}));

    // transformers 5's rope_parameters and the glm46v model type read the same; glm4v_moe reads as GLM-4.5V's decoder.
    QFile file(fixture("glm4v-tiny/config.json"));
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray legacy = file.readAll();
    // transformers 5's form: the rope keys folded into text_config.rope_parameters, model_type glm46v.
    QJsonObject root = QJsonDocument::fromJson(legacy).object(), text = root["text_config"].toObject();
    QJsonObject rope = text["rope_scaling"].toObject();
    rope["rope_theta"] = text.take("rope_theta");
    rope["partial_rotary_factor"] = text.take("partial_rotary_factor");
    rope["rope_type"] = rope.take("type");
    text.remove("rope_scaling");
    text["rope_parameters"] = rope;
    root["text_config"] = text;
    root["model_type"] = "glm46v";
    const QByteArray modern = QJsonDocument(root).toJson();
    QVERIFY(!modern.contains("rope_scaling") && !text.contains("rope_theta"));
    const ModelConfig a = parseModelConfig(legacy, "legacy"), b = parseModelConfig(modern, "modern");
    QCOMPARE(b.architecture, Architecture::GlmV);
    QCOMPARE(b.text.ropeTheta, a.text.ropeTheta);
    QCOMPARE(b.text.rotaryDim(), a.text.rotaryDim());
    QCOMPARE(b.text.mropeSection, a.text.mropeSection);
    QVERIFY(b.glm46 && !a.glm46); // GLM-4.6V's chat template: "{t:.1f} seconds" after each video frame
    // glm4v_moe is GLM-4.5V's decoder: the same positions turned on half-split pairs, two norms per layer.
    QByteArray moe = legacy;
    moe.replace("\"model_type\": \"glm4v\",", "\"model_type\": \"glm4v_moe\",");
    const ModelConfig m = parseModelConfig(moe, "moe/config.json");
    QCOMPARE(m.architecture, Architecture::GlmV);
    QCOMPARE(m.text.pairing, geometry::RotaryPairing::Half);
    QVERIFY(m.text.moe.any() && !m.text.sandwichNorms && !m.text.fusedGateUp);
}

// PaddleOCR-VL: the Hub's flat ERNIE text config with legacy rope_scaling, a nested SigLIP vision config, tie at the top.
void paddleOcrVlConfig(const ModelConfig& c)
{
    QCOMPARE(c.architecture, Architecture::PaddleOcrVl);
    QCOMPARE(c.text.headDim(), 32);
    QCOMPARE(c.text.rotaryDim(), 32);
    QCOMPARE(c.text.mropeSection, (std::vector<int>{4, 6, 6}));
    QCOMPARE(c.text.pairing, geometry::RotaryPairing::Half);
    QVERIFY(!c.text.attentionBias && !c.text.tieEmbeddings && !c.text.sandwichNorms);
    QCOMPARE(c.vision.temporalPatch, 1);
    QCOMPARE(c.vision.patchDim(), 3 * 14 * 14);
    QCOMPARE(c.vision.positionGridSide(), 4);
    QCOMPARE(c.imageToken, 250);
    QCOMPARE(c.visionStart, 252);
    QCOMPARE(c.eos, 2);
    QVERIFY(needsTokenTypes(c.architecture));
    // The real shapes (resources/configs): SigLIP's 384 / 14 floors to a 27 x 27 table, as num_patches does.
    const ModelConfig hub = loadModelConfig(ROPESCOPE_TEST_DATA + "/../../resources/configs/paddleocr-vl.json");
    QCOMPARE(hub.vision.positionEmbeddings, 729);
    QCOMPARE(hub.text.headDim(), 128);
    QCOMPARE(hub.text.mropeSection, (std::vector<int>{16, 24, 24}));
}

// Qwen3-VL-MoE: mlp_only_layers [1], no shared expert.
void qwen3VlMoeConfig(const ModelConfig& q3)
{
    QCOMPARE(q3.architecture, Architecture::Qwen3VL);
    QCOMPARE(q3.text.moe.sparseLayers, (std::vector<bool>{true, false, true})); // mlp_only_layers [1]
    QCOMPARE(q3.text.moe.sharedIntermediate, 0);
    QCOMPARE(QString::fromStdString(moeNote(q3.text)), QString("MoE: 8 experts, top-2 (2 of 3 layers sparse)"));
    QVERIFY(q3.text.moe.router == RouterKind::Softmax && !*q3.text.moe.names.correctionBias && !*q3.text.moe.names.sharedKey);
}

// Qwen3.5-MoE: every layer sparse, a gated shared expert.
void qwen35MoeConfig(const ModelConfig& q35)
{
    QCOMPARE(q35.architecture, Architecture::Qwen35);
    QCOMPARE(q35.modelType, std::string("qwen3_5_moe"));
    const MoeConfig& a = q35.text.moe;
    QVERIFY(a.router == RouterKind::Softmax && a.normTopK && a.sharedExpertGate);
    QCOMPARE(a.experts, 8);
    QCOMPARE(a.topK, 2);
    QCOMPARE(a.intermediate, 32);
    QCOMPARE(a.sharedIntermediate, 48);
    QCOMPARE(a.sparseCount(), 8); // every layer
    QCOMPARE(QString::fromStdString(moeNote(q35.text)), QString("MoE: 8 experts, top-2 + a shared expert"));
    QCOMPARE(QString(a.names.sharedExpert) + a.names.sharedGate, QString("shared_expert.shared_expert_gate.weight"));
}

// GLM-4.5V: the grouped sigmoid router with its scaling, n_shared_experts, the first layer dense.
void glm4vMoeConfig(const ModelConfig& glm)
{
    QCOMPARE(glm.architecture, Architecture::GlmV);
    const MoeConfig& g = glm.text.moe;
    QVERIFY(g.router == RouterKind::SigmoidGrouped && g.normTopK);
    QCOMPARE(g.groups, 2);
    QCOMPARE(g.topkGroup, 1);
    QCOMPARE(g.routedScaling, 2.5);
    QCOMPARE(g.sharedIntermediate, 32);                               // n_shared_experts x moe_intermediate_size
    QCOMPARE(g.sparseLayers, (std::vector<bool>{false, true, true})); // first_k_dense_replace 1
    QCOMPARE(QString(g.names.correctionBias) + " " + g.names.sharedExpert, QString("gate.e_score_correction_bias shared_experts."));
    // GLM-4.5V's decoder: half-split pairs, two norms, separate gate and up in the dense layer.
    QCOMPARE(glm.text.pairing, geometry::RotaryPairing::Half);
    QVERIFY(!glm.text.sandwichNorms && !glm.text.fusedGateUp && glm.text.attentionBias);
    QCOMPARE(glm.text.rotaryDim(), 16);
    // The dense families are unchanged.
    QVERIFY(!loadModelConfig(fixture("glm4v-tiny/config.json")).text.moe.any());
}

// Tolerances: each fixture README's (the MoE members take their dense sibling's). Hidden states and logits are
// compared as numpy's allclose with outputsRel as rtol: the Gemma README's "atol 1e-3 (rtol 1e-4)", since Gemma 4's
// layer outputs reach |12.8| and its sharp softmaxes amplify rounding (gemma4e-tiny_multi's layer outputs: 9.1e-4
// off on LibTorch 1.13 and 1.07e-3 on 2.6, 5.7e-4 and 7.1e-4 beyond rtol; the README's float64 probe of the gentler
// cases is 2.8e-4 off).
struct Tolerances {
    double outputs, attention, vision, states, rope, outputsRel = 0;
};

// text_config[key] = value, which the family's config reader refuses in one line naming the key.
struct Refusal {
    const char* key;
    QJsonValue value;
};

struct FamilyRow {
    const char* fixture;
    std::vector<const char*> cases; // suffixes of inputs*/expected*.safetensors
    Tolerances tol;
    // Keys every case of this family must hold and compare (what makes the row meaningful).
    std::vector<const char*> required;
    // The family's own, each empty where it has none:
    void (*config)(const ModelConfig& fixtureConfig);         // its config read as transformers reads it
    std::vector<Refusal> refusals;                            // values of its config refused, naming the key
    const char* tokenTypesRefused;                            // how a run is refused without mm_token_type_ids
    std::vector<std::pair<const char*, const char*>> layouts; // a case and the layout whose own-scheme positions it holds
};

const std::vector<FamilyRow>& families()
{
    static const Tolerances qwen2{1e-4, 1e-5, 1e-4, 0, 1e-5}, qwen35{3e-4, 5e-5, 1e-5, 1e-4, 1e-6}, glm{2e-4, 2e-5, 1e-4, 0, 1e-6},
        paddle{1e-4, 1e-5, 1e-4, 0, 1e-5}, gemma4{1e-3, 5e-4, 1e-4, 0, 1e-6, 1e-4}, gemma3{1e-4, 1e-5, 1e-4, 0, 1e-6};
    static const std::vector<const char*> decoder{"position_ids",          "rope_deltas", "text_rope_cos", "attentions",
                                                  "decoder_layer_outputs", "logits",      "generated_ids"};
    auto with = [](std::vector<const char*> a, std::initializer_list<const char*> more) {
        a.insert(a.end(), more);
        return a;
    };
    // The 1-D families: no rope_deltas; one rotary table and one mask per kind of layer.
    static const std::vector<const char*> gemma{"position_ids",        "text_rope_cos_full",     "text_rope_cos_sliding",
                                                "attention_mask_full", "attention_mask_sliding", "text_layer_types",
                                                "attentions",          "decoder_layer_outputs",  "logits",
                                                "generated_ids",       "generated_logits"};
    static const char* const glmTypes = "mm_token_type_ids: GLM-V needs it";
    static const std::vector<FamilyRow> rows{
        {"qwen2vl-tiny", {"", "_mid", "_multi"}, qwen2, decoder, nullptr, {}, nullptr, {}},
        {"qwen25vl-tiny", {"", "_mid", "_multi"}, qwen2, with(decoder, {"vision_window_index"}), nullptr, {}, nullptr, {}},
        {"qwen3vl-tiny", {"", "_mid", "_multi"}, qwen2, with(decoder, {"deepstack_embeds"}), nullptr, {}, nullptr, {}},
        {"qwen35-tiny",
         {"", "_mid", "_multi", "_video"},
         qwen35,
         with(decoder, {"deltanet_core_outputs", "deltanet_recurrent_states"}),
         nullptr,
         {},
         nullptr,
         {}},
        {"glm4v-tiny",
         {"", "_mid", "_multi", "_video", "_text"},
         glm,
         with(decoder, {"generated_logits"}),
         glm4vConfig,
         {},
         glmTypes,
         // GLM's begin/end and timestamp tokens counted as text: one image, two of different sizes, a video of per-frame spans.
         {{"", "text:4,image:2x3,text:5"},
          {"_multi", "text:3,image:2x3,text:5,image:4x3,text:3"},
          {"_video", "text:5,video:1x2x2,text:4,video:1x2x2,text:8"}}},
        {"paddleocr-vl-tiny",
         {"", "_mid", "_multi", "_text"},
         paddle,
         with(decoder, {"generated_logits"}),
         paddleOcrVlConfig,
         {},
         "mm_token_type_ids: PaddleOCR-VL needs it",
         {}},
        {"qwen3vlmoe-tiny",
         {"", "_mid", "_multi"},
         qwen2,
         with(decoder, {"deepstack_embeds", "moe_layer_indexes", "moe_router_probs", "moe_router_experts", "moe_router_weights"}),
         qwen3VlMoeConfig,
         {{"routed_scaling_factor", 2.5}, {"num_experts_per_tok", 9}, {"mlp_only_layers", QJsonArray{7}}},
         nullptr,
         {}},
        {"qwen35moe-tiny",
         {"", "_mid", "_multi", "_video"},
         qwen35,
         with(decoder, {"deltanet_core_outputs", "moe_router_probs", "moe_router_experts", "moe_router_weights"}),
         qwen35MoeConfig,
         {{"n_group", 2}, {"norm_topk_prob", false}},
         nullptr,
         {}},
        {"glm4vmoe-tiny",
         {"", "_mid", "_multi", "_video", "_text"},
         glm,
         with(decoder, {"moe_layer_indexes", "moe_router_logits", "moe_router_experts", "moe_router_weights", "cached_generated_ids"}),
         glm4vMoeConfig,
         {{"scoring_func", "softmax"}, {"n_group", 3}, {"topk_group", 3}, {"topk_method", "greedy"}, {"num_experts_per_tok", 5}},
         glmTypes,
         {}},
        {"gemma4-tiny", {"", "_multi", "_long", "_video", "_text"}, gemma4, gemma, nullptr, {}, nullptr, {}},
        {"gemma4e-tiny", {"", "_multi", "_long", "_video", "_text"}, gemma4, with(gemma, {"per_layer_inputs"}), nullptr, {}, nullptr, {}},
        {"gemma3-tiny", {"", "_multi", "_long", "_text"}, gemma3, gemma, nullptr, {}, nullptr, {}},
        {"gemma4moe-tiny",
         {"", "_multi", "_long", "_video", "_text"},
         gemma4,
         with(gemma, {"moe_layer_indexes", "moe_router_logits", "moe_router_experts", "moe_router_weights"}),
         nullptr,
         {},
         nullptr,
         {}},
    };
    return rows;
}

const FamilyRow& familyRow(const QString& name)
{
    for (const FamilyRow& row : families())
        if (name == row.fixture)
            return row;
    qFatal("no family row %s", qPrintable(name));
}

// The fixture's inputs as the engine takes them (the engine's own conversion, which `ropescope forward` runs too):
// Qwen's and GLM-V's rows and grids as they are (a video's [T, h, w] rows: the engine splits them per frame where
// transformers does); Gemma 4's padded patches with their (x, y) positions and Gemma 3's images as valid patch rows
// and grids.
ForwardRequest engineRequestFor(const SafeTensors& inputs, const ModelConfig& config)
{
    ForwardRequest req;
    req.inputIds = toTorch(inputs, "input_ids").flatten();
    readProcessorInputs(inputs, config, req);
    return req;
}

// What one case's producers read: the run, its request, and the video tower traced on its own.
struct Run {
    Vlm* vlm;
    ForwardRequest req;
    ForwardResult r;
    VisionTrace video;
    torch::Tensor videoTowerGrid;
    int64_t length = 0;
    // Gemma 4: the fixture's own vision_padding_positions and vision_pooler_mask (True = padding, True = valid).
    torch::Tensor padding, poolerMask;
    const geometry::PositionTable& table() const { return r.layerTables[static_cast<size_t>(vlm->config().text.attentionLayers()[0])]; }
    // The tower's trace of the case's images, or of its video (Gemma 4's _video records its frames as vision_*), and
    // the grid it ran on (a video: one (1, h, w) a frame).
    const VisionTrace& tower() const { return req.pixelValues.defined() ? r.vision : video; }
    const torch::Tensor& towerGrid() const { return req.pixelValues.defined() ? req.imageGridThw : videoTowerGrid; }
};

enum class Compare { Exact, Outputs, Attention, Vision, States, Rope };

// A key: our tensor for it (given theirs, for the few whose layout is transformers' own and must be mixed).
struct Key {
    Compare compare;
    std::function<std::pair<torch::Tensor, torch::Tensor>(const Run&, const torch::Tensor& theirs)> produce;
};

torch::Tensor stacked(const std::vector<torch::Tensor>& v, bool batchDim = false)
{
    const auto s = torch::stack(v, 0);
    return batchDim ? s.unsqueeze(1) : s;
}

template <class T> torch::Tensor stackedMember(const std::vector<T>& items, torch::Tensor T::*member)
{
    std::vector<torch::Tensor> all;
    for (const T& t : items)
        all.push_back(t.*member);
    return torch::stack(all, 0);
}

// Gemma 4's fixtures hold each image padded to the processor's budget (630 patches, 70 soft tokens); RopeScope forms
// the valid rows only (padding changes no valid row: its keys are masked and the pooler zeroes it), so only those are
// compared, picked by the fixture's own mask `keep` ([images, P], True = valid) over the rows' dim (the last but one).
torch::Tensor validRows(const torch::Tensor& theirs, const torch::Tensor& keep)
{
    const int64_t images = theirs.dim() - keep.dim() - 1; // the images' dim
    return theirs.flatten(images, images + 1).index_select(images, keep.flatten().nonzero().squeeze(1));
}

// Our rows [.., N, C] against a fixture's per-image tensor [.., images, P, C]: Gemma 4's valid rows (above), or
// Gemma 3's rows as its images (36 patches, 9 soft tokens each). Same-rank tensors (the other families) as they are.
std::pair<torch::Tensor, torch::Tensor> fitted(const torch::Tensor& padding, const torch::Tensor& ours, const torch::Tensor& theirs)
{
    if (!ours.defined() || theirs.dim() <= ours.dim())
        return {ours, theirs};
    if (padding.defined() && theirs.size(-2) == padding.size(-1))
        return {ours, validRows(theirs, padding.logical_not())};
    return {ours.numel() == theirs.numel() ? ours.reshape(theirs.sizes()) : ours, theirs};
}

// Per image (or frame) of `grid`: `length` entries, the first `count(h, w)` of them `first` (Gemma 4's padding comes
// after an image's patches and soft tokens).
torch::Tensor leadingMask(const torch::Tensor& grid, int64_t length, const std::function<int64_t(int64_t, int64_t)>& count, bool first)
{
    std::vector<torch::Tensor> rows;
    for (int64_t i = 0; i < grid.size(0); ++i) {
        const auto lead = torch::arange(length) < count(grid[i][1].item<int64_t>(), grid[i][2].item<int64_t>());
        for (int64_t f = 0; f < grid[i][0].item<int64_t>(); ++f)
            rows.push_back(first ? lead : lead.logical_not());
    }
    return torch::stack(rows);
}

// transformers' per-axis rotary tables [3, 1, L, d] (Qwen2-VL, PaddleOCR-VL) mixed as its forward does: chunk i
// of the split by mrope_section * 2 comes from axis i % 3. The newer fixtures hold the mixed [1, L, d].
torch::Tensor mixedRotary(const torch::Tensor& theirs, const TextConfig& text)
{
    if (theirs.dim() == 3)
        return theirs.squeeze(0);
    std::vector<int64_t> sizes;
    for (int k = 0; k < 2; ++k)
        for (int s : text.mropeSection)
            sizes.push_back(s);
    const auto chunks = theirs.squeeze(1).split_with_sizes(sizes, -1);
    std::vector<torch::Tensor> parts;
    for (size_t i = 0; i < chunks.size(); ++i)
        parts.push_back(chunks[i][static_cast<int64_t>(i % 3)]);
    return torch::cat(parts, -1);
}

// Gemma's own vision keys: Gemma 4's masks of valid patches and soft tokens (ours from the grids, exact), its pooler
// output (valid soft tokens only) and standardised soft tokens, of the case's images or of its video's frames; Gemma
// 3's AvgPool [n, width, s, s].
void gemmaVisionKeys(std::map<std::string, Key>& k)
{
    using P = std::pair<torch::Tensor, torch::Tensor>;
    k["vision_padding_positions"] = {Compare::Exact, [](const Run& run, const torch::Tensor& t) {
                                         const auto count = [](int64_t h, int64_t w) { return h * w; };
                                         return P{leadingMask(run.towerGrid(), t.size(-1), count, false), t};
                                     }};
    k["vision_pooler_mask"] = {Compare::Exact, [](const Run& run, const torch::Tensor& t) {
                                   const int64_t kernel = run.vlm->config().vision.poolingKernel;
                                   const auto count = [kernel](int64_t h, int64_t w) { return (h / kernel) * (w / kernel); };
                                   return P{leadingMask(run.towerGrid(), t.size(-1), count, true), t};
                               }};
    k["vision_pooler_output"] = {Compare::Vision, [](const Run& run, const torch::Tensor& t) {
                                     return P{run.tower().pooled, validRows(t, run.poolerMask)};
                                 }};
    k["vision_soft_tokens"] = {Compare::Vision, [](const Run& run, const torch::Tensor& t) { return P{run.tower().softTokens, t}; }};
    k["vision_avg_pool"] = {Compare::Vision, [](const Run& run, const torch::Tensor& t) {
                                const auto pooled = run.r.vision.pooled; // [n * s * s, width], raster order
                                return P{pooled.view({t.size(0), t.size(2), t.size(3), -1}).permute({0, 3, 1, 2}), t};
                            }};
}

std::map<std::string, Key> keys()
{
    using P = std::pair<torch::Tensor, torch::Tensor>;
    std::map<std::string, Key> k;
    auto same = [](std::function<torch::Tensor(const Run&)> f) {
        return [f](const Run& run, const torch::Tensor& t) { return P{f(run), t}; };
    };
    auto positions = [](const Run& run) {
        const auto p = positionsOf(run.table());
        return run.table().components() == 1 ? p : p.unsqueeze(1); // 1-D: [batch, L] as transformers keeps it
    };
    k["position_ids"] = {Compare::Exact, same(positions)};
    k["rope_deltas"] = {Compare::Exact, same([](const Run& run) {
                            return torch::tensor({{static_cast<int64_t>(run.table().positions.maxCoeff()) + 1 - run.length}});
                        })};
    for (const bool cos : {true, false})
        k[cos ? "text_rope_cos" : "text_rope_sin"] = {Compare::Rope, [cos](const Run& run, const torch::Tensor& t) {
                                                          const LayerRotary rot = run.vlm->rotaryFor(run.table(), 0, run.length);
                                                          return P{cos ? rot.cos : rot.sin, mixedRotary(t, run.vlm->config().text)};
                                                      }};
    // Gemma: each kind of layer's rotary (sliding: default rope; full: proportional or linearly scaled) and mask.
    auto firstLayerOf = [](const TextConfig& text, bool sliding) {
        for (int i = 0; i < text.layers; ++i)
            if (text.isSliding(i) == sliding)
                return i;
        return -1;
    };
    for (const bool sliding : {true, false})
        for (const bool cos : {true, false})
            k[std::string(cos ? "text_rope_cos_" : "text_rope_sin_") + (sliding ? "sliding" : "full")] = {
                Compare::Rope, [cos, sliding, firstLayerOf](const Run& run, const torch::Tensor& t) {
                    const TextConfig& text = run.vlm->config().text;
                    const int layer = firstLayerOf(text, sliding);
                    const LayerRotary rot = rotaryForTable(run.r.layerTables[static_cast<size_t>(layer)], text, text.layerKind(layer),
                                                           torch::kCPU, 0, run.length);
                    return P{(cos ? rot.cos : rot.sin).unsqueeze(0), t};
                }};
    for (const bool sliding : {true, false})
        k[sliding ? "attention_mask_sliding" : "attention_mask_full"] = {
            Compare::Exact, same([sliding, firstLayerOf](const Run& run) {
                const ModelConfig& c = run.vlm->config();
                const auto ids = run.req.inputIds.to(torch::kInt64).contiguous();
                const auto blocks = imageBlockIds(std::vector<int64_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + ids.numel()),
                                                  c.imageToken, c.videoToken);
                return visibleKeysOfLayer(c.text, firstLayerOf(c.text, sliding), blocks, run.length);
            })};
    k["text_layer_types"] = {Compare::Exact, same([](const Run& run) {
                                 const TextConfig& text = run.vlm->config().text;
                                 std::vector<int64_t> types;
                                 for (int i = 0; i < text.layers; ++i)
                                     types.push_back(text.isSliding(i) ? 0 : 1);
                                 return torch::tensor(types);
                             })};
    k["per_layer_inputs"] = {Compare::Outputs, same([](const Run& run) { return run.r.prefill.perLayerInputs.permute({2, 0, 1, 3}); })};
    // The tower's intermediates, of the prompt's images (vision_*) and of its video traced per frame (video_*).
    struct TraceKey {
        const char* name;
        Compare compare;
        std::function<torch::Tensor(const VisionTrace&)> get;
    };
    const std::vector<TraceKey> trace{
        {"patch_embeds", Compare::Vision, [](const VisionTrace& v) { return v.patchEmbeds; }},
        {"post_conv_norm", Compare::Vision, [](const VisionTrace& v) { return v.postConvNorm; }},
        {"pos_embeds", Compare::Vision, [](const VisionTrace& v) { return v.positionEmbeds; }},
        {"embeddings", Compare::Vision, [](const VisionTrace& v) { return v.embeddings; }},
        {"rotary_freqs", Compare::Vision, [](const VisionTrace& v) { return v.rotaryFreqs; }},
        {"rotary_cos", Compare::Vision,
         [](const VisionTrace& v) {
             return v.rotaryCos.defined() ? v.rotaryCos : torch::cat({v.rotaryFreqs, v.rotaryFreqs}, -1).cos();
         }},
        {"rotary_sin", Compare::Vision,
         [](const VisionTrace& v) {
             return v.rotarySin.defined() ? v.rotarySin : torch::cat({v.rotaryFreqs, v.rotaryFreqs}, -1).sin();
         }},
        {"patch_embeddings", Compare::Vision, [](const VisionTrace& v) { return v.embeddings; }}, // Gemma 4: projection + table
        {"soft_emb_norm", Compare::Vision, [](const VisionTrace& v) { return v.softTokens; }},    // Gemma 3
        {"block_outputs", Compare::Vision, [](const VisionTrace& v) { return stacked(v.blockOutputs); }},
        {"post_layernorm", Compare::Vision, [](const VisionTrace& v) { return v.postLayernorm; }},
        {"downsample", Compare::Vision, [](const VisionTrace& v) { return v.downsample; }},
        {"cu_seqlens", Compare::Exact, [](const VisionTrace& v) { return v.cuSeqlens.to(torch::kInt64); }},
        {"pos_h", Compare::Exact, [](const VisionTrace& v) { return v.positionH; }},
        {"pos_w", Compare::Exact, [](const VisionTrace& v) { return v.positionW; }},
        {"window_index", Compare::Exact, [](const VisionTrace& v) { return v.windowIndex.to(torch::kInt64); }},
        {"cu_window_seqlens", Compare::Exact, [](const VisionTrace& v) { return v.cuWindowSeqlens.to(torch::kInt64); }},
    };
    for (const TraceKey& t : trace) {
        auto get = t.get;
        k[std::string("vision_") + t.name] = {
            t.compare, [get](const Run& run, const torch::Tensor& theirs) { return fitted(run.padding, get(run.r.vision), theirs); }};
        k[std::string("video_") + t.name] = {t.compare, same([get](const Run& run) { return get(run.video); })};
    }
    gemmaVisionKeys(k);
    k["vision_tower_grid_thw"] = {Compare::Exact, same([](const Run& run) { return run.req.imageGridThw; })};
    k["video_tower_grid_thw"] = {Compare::Exact, same([](const Run& run) { return run.videoTowerGrid; })};
    k["projector_pre_norm"] = {Compare::Vision, same([](const Run& run) { return run.r.vision.projectorPreNorm; })};
    k["projector_merged_input"] = {Compare::Vision, same([](const Run& run) { return run.r.vision.projectorMerged; })};
    k["image_embeds"] = {Compare::Vision, [](const Run& run, const torch::Tensor& t) {
                             return fitted({}, run.r.imageEmbeds, t);
                         }}; // Gemma 3: [n, 9, hidden]
    k["video_embeds"] = {Compare::Vision, same([](const Run& run) { return run.r.videoEmbeds; })};
    k["deepstack_embeds"] = {Compare::Vision, same([](const Run& run) { return stacked(run.r.deepstackEmbeds); })};
    k["inputs_embeds"] = {Compare::Vision, same([](const Run& run) { return run.r.inputsEmbeds.unsqueeze(0); })};
    // Gated DeltaNet (Qwen3.5): each linear layer's g, beta, output and end state. g is an unbounded projection of the
    // layer's input (|g| up to 4.4 in the fixtures), so it has the layer outputs' tolerance: on a Xeon with AVX-512
    // (OpenBLAS's kernels for it) the mid case's deepest g was 5.4e-5 off, 1.3e-5 of its size.
    k["deltanet_g"] = {Compare::Outputs, same([](const Run& run) { return stackedMember(run.r.prefill.deltaTraces, &DeltaNetTrace::g); })};
    k["deltanet_beta"] = {Compare::Attention,
                          same([](const Run& run) { return stackedMember(run.r.prefill.deltaTraces, &DeltaNetTrace::beta); })};
    k["deltanet_core_outputs"] = {Compare::Attention,
                                  same([](const Run& run) { return stackedMember(run.r.prefill.deltaTraces, &DeltaNetTrace::core); })};
    k["deltanet_recurrent_states"] = {
        Compare::States, same([](const Run& run) { return stackedMember(run.r.prefill.deltaStates, &DeltaNetState::recurrent); })};
    k["deltanet_conv_states"] = {Compare::States,
                                 same([](const Run& run) { return stackedMember(run.r.prefill.deltaStates, &DeltaNetState::conv); })};
    k["full_attention_layer_indexes"] = {Compare::Exact, same([](const Run& run) {
                                             const auto l = run.vlm->config().text.attentionLayers();
                                             return torch::tensor(std::vector<int64_t>(l.begin(), l.end()));
                                         })};
    // The decoder.
    k["attentions"] = {Compare::Attention, same([](const Run& run) { return stacked(run.r.prefill.attentions, true); })};
    k["decoder_layer_outputs"] = {Compare::Outputs, same([](const Run& run) { return stacked(run.r.prefill.layerOutputs, true); })};
    k["final_norm_output"] = {Compare::Outputs, same([](const Run& run) { return run.r.prefill.finalNorm.unsqueeze(0); })};
    k["logits"] = {Compare::Outputs, same([](const Run& run) { return run.r.prefill.logits.unsqueeze(0); })};
    // Greedy generation runs on the KV cache; transformers' cached and uncached runs agree in every fixture.
    k["generated_ids"] = {Compare::Exact, same([](const Run& run) { return run.r.generatedIds.unsqueeze(0); })};
    k["cached_generated_ids"] = k["generated_ids"];
    k["generated_logits"] = {Compare::Outputs, same([](const Run& run) { return run.r.generatedLogits.unsqueeze(0); })};
    // Mixture of experts: each sparse layer's router.
    k["moe_layer_indexes"] = {Compare::Exact, same([](const Run& run) {
                                  std::vector<int64_t> layers;
                                  for (const RouterTrace& t : run.r.prefill.routers)
                                      layers.push_back(t.layer);
                                  return torch::tensor(layers);
                              })};
    for (const char* name : {"moe_router_probs", "moe_router_logits"})
        k[name] = {Compare::Outputs, same([](const Run& run) { return stackedMember(run.r.prefill.routers, &RouterTrace::scores); })};
    k["moe_router_weights"] = {Compare::Outputs,
                               same([](const Run& run) { return stackedMember(run.r.prefill.routers, &RouterTrace::weights); })};
    k["moe_router_experts"] = {Compare::Exact,
                               same([](const Run& run) { return stackedMember(run.r.prefill.routers, &RouterTrace::experts); })};
    return k;
}

// Recorded for reading, not produced by a run: transformers' own bookkeeping.
const std::set<std::string> kNotCompared{"text_inv_freq", "generate_position_ids", "generated_ids_cached_agree",
                                         "linear_attention_layer_indexes"};

} // namespace

class TestFamilyParity : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void matchesTransformers_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("suffix");
        for (const FamilyRow& row : families())
            for (const char* s : row.cases)
                QTest::newRow(qPrintable(QString("%1%2").arg(row.fixture, s))) << QString(row.fixture) << QString(s);
    }
    void matchesTransformers()
    {
        QFETCH(QString, family);
        QFETCH(QString, suffix);
        const FamilyRow& row = familyRow(family);
        const SafeTensors inputs = SafeTensors::open(fixture(family + "/inputs" + suffix + ".safetensors"));
        const SafeTensors expected = SafeTensors::open(fixture(family + "/expected" + suffix + ".safetensors"));

        Vlm vlm(fixture(family));
        Run run{&vlm, engineRequestFor(inputs, vlm.config()), {}, {}, {}, 0, {}, {}};
        if (expected.find("vision_padding_positions")) {
            run.padding = toTorch(expected, "vision_padding_positions");
            run.poolerMask = toTorch(expected, "vision_pooler_mask");
        }
        // ROPESCOPE_PARITY_SCHEME lets a developer check that the comparison fails for another scheme.
        const geometry::SchemeKind own = ownSchemeKind(vlm.config());
        run.req.scheme = geometry::defaultSchemeParams(
            geometry::schemeFromName(qEnvironmentVariable("ROPESCOPE_PARITY_SCHEME").toStdString()).value_or(own));
        run.req.capture.layers = vlm.config().text.attentionLayers();
        run.req.capture.layerOutputs = true;
        run.req.capture.allLogits = true;
        run.req.capture.deltaNet = true;
        run.req.capture.routers = true;
        run.req.generate = 5;
        run.r = vlm.run(run.req, /*traceVision=*/true);
        run.length = run.req.inputIds.numel();
        // Gemma 4's _video records its frames' tower as vision_*: traced here as the other families' video_*.
        const bool videoAsVision = !run.req.pixelValues.defined() && expected.find("vision_pooler_output");
        if (run.req.videoGridThw.defined() && (expected.find("video_patch_embeds") || videoAsVision)) {
            // The tower sees one [1, h, w] grid per temporal patch where the processor separates frames.
            run.videoTowerGrid = run.req.videoGridThw;
            if (separatesVideoFrames(vlm.config().architecture)) {
                std::vector<torch::Tensor> frames;
                for (int64_t v = 0; v < run.req.videoGridThw.size(0); ++v) {
                    const auto g = run.req.videoGridThw[v];
                    frames.push_back(torch::stack({torch::ones({}, torch::kInt64), g[1], g[2]}).repeat({g[0].item<int64_t>(), 1}));
                }
                run.videoTowerGrid = torch::cat(frames, 0);
            }
            vlm.encodeImages(run.req.videoPixelValues, run.videoTowerGrid, &run.video);
        }

        const std::map<std::string, Key> known = keys();
        auto tolerance = [&](Compare c) {
            switch (c) {
            case Compare::Exact: return 0.0;
            case Compare::Outputs: return row.tol.outputs;
            case Compare::Attention: return row.tol.attention;
            case Compare::Vision: return row.tol.vision;
            case Compare::States: return row.tol.states;
            case Compare::Rope: return row.tol.rope;
            }
            return 0.0;
        };
        std::set<std::string> compared;
        QStringList unknown;
        for (const TensorInfo& info : expected.tensors()) {
            const auto it = known.find(info.name);
            if (it == known.end()) {
                if (!kNotCompared.count(info.name))
                    unknown << QString::fromStdString(info.name);
                continue;
            }
            const auto theirs = toTorch(expected, info.name.c_str());
            const auto [ours, want] = it->second.produce(run, theirs);
            const QString what = QString::fromStdString(info.name);
            QVERIFY2(ours.defined(), qPrintable(what + ": the run produced nothing"));
            if (it->second.compare == Compare::Exact) {
                QVERIFY2(ours.sizes() == want.sizes() && torch::equal(ours.to(torch::kInt64), want.to(torch::kInt64)),
                         qPrintable(what + " differs"));
            } else if (it->second.compare == Compare::Outputs) {
                EXPECT_ALLCLOSE(ours, want, row.tol.outputs, row.tol.outputsRel, what);
            } else {
                EXPECT_CLOSE(ours, want, tolerance(it->second.compare), what);
            }
            compared.insert(info.name);
        }
        // Keys the harness has no producer for would be silent gaps: none may be left.
        QVERIFY2(unknown.isEmpty(), qPrintable("keys of the fixture no producer compares: " + unknown.join(", ")));
        for (const char* required : row.required)
            if (std::string(required) != "generated_logits" || expected.find("generated_logits"))
                QVERIFY2(compared.count(required), qPrintable(QString("%1 was not compared").arg(required)));
        qInfo("%s%s: %zu keys compared", qPrintable(family), qPrintable(suffix), compared.size());
    }

    // Decoding writes into a KV cache of fixed capacity (the shapes a CUDA graph replays, with the slots not yet
    // written masked); ROPESCOPE_DECODE_CACHE=growing keeps the cache that grows by concatenation. Both must
    // decode the same tokens with the same logits and step attention, for every family (Qwen3.5's DeltaNet state
    // is updated in place in the first).
    void fixedShapeDecodingEqualsGrowingCache_data()
    {
        QTest::addColumn<QString>("family");
        for (const FamilyRow& row : families())
            QTest::newRow(row.fixture) << QString(row.fixture);
    }
    void fixedShapeDecodingEqualsGrowingCache()
    {
        QFETCH(QString, family);
        const SafeTensors inputs = SafeTensors::open(fixture(family + "/inputs" + familyRow(family).cases[0] + ".safetensors"));
        Vlm vlm(fixture(family));
        ForwardRequest req = engineRequestFor(inputs, vlm.config());
        req.scheme = geometry::defaultSchemeParams(ownSchemeKind(vlm.config()));
        req.generate = 7;
        req.capture.layers = {vlm.config().text.attentionLayers().back()};
        req.capture.selection.cols = torch::arange(req.inputIds.numel());
        req.captureSteps = true;
        const ForwardResult fixed = vlm.run(req);
        qputenv("ROPESCOPE_DECODE_CACHE", "growing");
        const ForwardResult growing = vlm.run(req);
        qunsetenv("ROPESCOPE_DECODE_CACHE");
        QCOMPARE(fixed.stepMs.size(), size_t(6));
        QVERIFY(!fixed.stepsGraphed); // a CPU run
        for (const ForwardResult* r : {&fixed, &growing}) {
            QCOMPARE(r->stepAttentions.size(), size_t(1));
            QCOMPARE(r->stepAttentions[0].size(1), int64_t(6));
        }
        QVERIFY(torch::equal(fixed.generatedIds, growing.generatedIds));
        const double err = (fixed.generatedLogits - growing.generatedLogits).abs().max().item<double>();
        const double scale = growing.generatedLogits.abs().max().item<double>();
        const double attentionErr = (fixed.stepAttentions[0] - growing.stepAttentions[0]).abs().max().item<double>();
        qInfo("%s: fixed against growing cache, logits max err %.3g (max |logit| %.3g), step attention %.3g", qPrintable(family), err,
              scale, attentionErr);
        QVERIFY2(err <= 1e-5 * std::max(1.0, scale), qPrintable(QString("logits differ by %1").arg(err)));
        QVERIFY2(attentionErr <= 5e-6, qPrintable(QString("step attention differs by %1").arg(attentionErr)));
    }

    // Each family's config read as transformers reads it: the fixture's, and the forms and Hub configs its row checks.
    void configReadsAsTransformers_data()
    {
        QTest::addColumn<QString>("family");
        for (const FamilyRow& row : families())
            if (row.config)
                QTest::newRow(row.fixture) << QString(row.fixture);
    }
    void configReadsAsTransformers()
    {
        QFETCH(QString, family);
        familyRow(family).config(loadModelConfig(fixture(family + "/config.json")));
    }

    // A setting RopeScope would not apply as the model does (a router's, for the MoE members) is refused in one line
    // naming the key.
    void unknownSettingsAreRefused_data()
    {
        QTest::addColumn<QByteArray>("json");
        QTest::addColumn<QString>("key");
        for (const FamilyRow& row : families())
            for (const Refusal& r : row.refusals)
                QTest::newRow(qPrintable(
                    QString("%1 %2 %3").arg(row.fixture, r.key, QJsonDocument(QJsonArray{r.value}).toJson(QJsonDocument::Compact))))
                    << withTextKey(row.fixture, r.key, r.value) << QString(r.key);
    }
    void unknownSettingsAreRefused()
    {
        QFETCH(QByteArray, json);
        QFETCH(QString, key);
        const QString m = refusal(json);
        QVERIFY2(m.startsWith("m/config.json: text_config." + key) && !m.contains('\n'), qPrintable(m));
    }

    // Without mm_token_type_ids the image pads are not placed (GLM-V's images and video frames are not told apart):
    // refused in one line. A type on a text token is named with its index; text alone needs none.
    void tokenTypesAreRequired_data()
    {
        QTest::addColumn<QString>("family");
        for (const FamilyRow& row : families())
            if (row.tokenTypesRefused)
                QTest::newRow(row.fixture) << QString(row.fixture);
    }
    void tokenTypesAreRequired()
    {
        QFETCH(QString, family);
        Vlm vlm(fixture(family));
        ForwardRequest req = requestFor(family);
        req.tokenTypes = torch::Tensor();
        try {
            vlm.run(req);
            QFAIL("ran without mm_token_type_ids");
        } catch (const ModelError& e) {
            const QString m = e.what();
            QVERIFY2(m.startsWith(familyRow(family).tokenTypesRefused) && !m.contains('\n'), e.what());
        }
        // A type on a text token is named with its index.
        req = requestFor(family);
        req.tokenTypes = req.tokenTypes.clone();
        req.tokenTypes[0] = 1;
        try {
            vlm.run(req);
            QFAIL("ran with a typed text token");
        } catch (const ModelError& e) {
            QVERIFY2(QString(e.what()).contains("token 0 has type 1"), e.what());
        }
        // Text alone needs none: its positions are 1-D either way.
        ForwardRequest text = requestFor(family, "_text");
        text.tokenTypes = torch::Tensor();
        QCOMPARE(vlm.run(text).prefill.logits.size(0), int64_t(1));
    }

    // The explorer's built-in scheme of the family (glm-v for GLM-V) on layouts written by hand gives the fixtures'
    // position_ids.
    void builtInSchemeEqualsTheFixtures_data()
    {
        QTest::addColumn<QString>("family");
        QTest::addColumn<QString>("suffix");
        QTest::addColumn<QString>("layout");
        for (const FamilyRow& row : families())
            for (const auto& [suffix, layout] : row.layouts)
                QTest::newRow(qPrintable(QString("%1%2").arg(row.fixture, suffix)))
                    << QString(row.fixture) << QString(suffix) << QString(layout);
    }
    void builtInSchemeEqualsTheFixtures()
    {
        QFETCH(QString, family);
        QFETCH(QString, suffix);
        QFETCH(QString, layout);
        const geometry::SchemeKind own = ownSchemeKind(loadModelConfig(fixture(family + "/config.json")));
        const geometry::PositionTable t =
            geometry::buildPositionTable(geometry::parseLayout(layout.toStdString()), geometry::defaultSchemeParams(own));
        const auto want = toTorch(SafeTensors::open(fixture(family + "/expected" + suffix + ".safetensors")), "position_ids");
        QVERIFY(torch::equal(positionsOf(t).unsqueeze(1), want));
    }
};

QTEST_GUILESS_MAIN(TestFamilyParity)
#include "test_family_parity.moc"
