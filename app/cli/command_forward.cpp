// `ropescope forward`: the model on pre-tokenized, pre-processed inputs (the fixtures' tensor names),
// writing the tensors a reference implementation can be checked against.
#include "app/cli/cli_error.h"
#include "app/cli/commands.h"
#include "app/cli/geometry_options.h"
#include "app/cli/model_options.h"
#include "app/cli/output.h"
#include "core/model/engine/processor_inputs.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/vlm.h"

#include <torch/types.h>
#include <cmath>

#include <cstdio>
#include <utility>

namespace ropescope::cli {

namespace {

// Positions as the model used them: int64 where every value is whole (as Hugging Face writes
// position_ids), float32 for schemes with fractional positions (Circle-RoPE).
torch::Tensor positionTensor(const geometry::PositionTable& t)
{
    const auto p = torch::from_blob(const_cast<double*>(t.positions.data()), {t.components(), t.size()}, torch::kFloat64).clone();
    const bool whole = (p - p.round()).abs().max().item<double>() == 0.0;
    return (whole ? p.to(torch::kInt64) : p.to(torch::kFloat32)).unsqueeze(1);
}

std::string shapeText(c10::IntArrayRef sizes)
{
    std::string out;
    for (const int64_t n : sizes)
        out += (out.empty() ? "" : ", ") + std::to_string(n);
    return out;
}

} // namespace

namespace {

// The request's tensors from the inputs file, checked as forward needs them: one unpadded sequence, grids only
// with their pixels. The scheme and the captures are the caller's.
model::ForwardRequest readForwardRequest(const QString& path, const model::ModelConfig& config)
{
    const model::SafeTensors inputs = model::SafeTensors::open(path);
    auto bad = [&](const std::string& what) { return model::BadInputFile(path.toStdString() + ": " + what); };
    model::ForwardRequest req;
    req.inputIds = model::toTorch(inputs, "input_ids");
    if (req.inputIds.dim() > 2 || (req.inputIds.dim() == 2 && req.inputIds.size(0) != 1))
        throw bad("input_ids: one sequence at a time ([L] or [1, L]), got " + std::to_string(req.inputIds.dim()) + "-D [" +
                  shapeText(req.inputIds.sizes()) + "]");
    req.inputIds = req.inputIds.flatten();
    if (req.inputIds.numel() == 0) // before the mask's check, which would otherwise speak of "0 tokens"
        throw bad("input_ids: holds no tokens (an empty prompt); give at least one token id");
    if (inputs.find("attention_mask")) { // one unpadded sequence: a mask that hides tokens would be ignored, so it is refused
        const auto mask = model::toTorch(inputs, "attention_mask");
        if (mask.numel() != req.inputIds.numel() || !(mask == 1).all().item<bool>())
            throw bad("attention_mask must be all ones over input_ids' " + std::to_string(req.inputIds.numel()) +
                      " tokens (forward runs one unpadded sequence; leave padding out)");
    }
    // A grid whose pixels are not given describes vision the prompt never feeds: refused, not ignored.
    for (const auto& [grid, pixels] : {std::pair{"image_grid_thw", "pixel_values"}, std::pair{"video_grid_thw", "pixel_values_videos"}})
        if (inputs.find(grid) && !inputs.find(pixels))
            throw bad(std::string(grid) + " is given without " + pixels + " (give both, or neither)");
    // Pixels and grids as the processor wrote them (Gemma 4's padded patches with their positions and Gemma 3's
    // images become the tower's rows and grids), and mm_token_type_ids (GLM-V's and Gemma 4's pad types).
    try {
        model::readProcessorInputs(inputs, config, req);
    } catch (const model::BadRequest& e) {
        throw bad(e.what());
    }
    return req;
}

// The positions the first attention layer used, as transformers names them.
void addPositions(model::SafeTensorsWriter& out, const geometry::PositionTable& table)
{
    out.setMetadata("format", "pt");
    out.setMetadata("scheme", table.schemeLabel());
    out.setMetadata("layout", table.layout.toString());
    out.setMetadata("allocation", table.allocation.toString());
    const auto positions = positionTensor(table);
    model::addTensor(out, "position_ids", positions);
    if (positions.scalar_type() == torch::kInt64 && positions.size(0) == 3)
        // As transformers 5 (Qwen3.5, GLM-V) hands them to generation: row 0 (plain 0..L-1) feeds only the
        // causal mask, rows 1-3 are t, h, w.
        model::addTensor(out, "generate_position_ids",
                         torch::cat({torch::arange(table.size(), torch::kInt64).view({1, 1, -1}), positions}, 0));
    const double delta = table.positions.maxCoeff() + 1 - table.size();
    model::addTensor(out, "rope_deltas",
                     positions.scalar_type() == torch::kInt64 ? torch::full({1, 1}, static_cast<int64_t>(std::llround(delta)))
                                                              : torch::full({1, 1}, static_cast<float>(delta)));
}

// Each sparse layer's router, as the MoE fixtures name them.
void addRouters(model::SafeTensorsWriter& out, const std::vector<model::RouterTrace>& routers, bool softmax)
{
    std::vector<torch::Tensor> scores, experts, weights;
    std::vector<int64_t> layers;
    for (const model::RouterTrace& t : routers) {
        scores.push_back(t.scores);
        experts.push_back(t.experts);
        weights.push_back(t.weights);
        layers.push_back(t.layer);
    }
    model::addTensor(out, softmax ? "moe_router_probs" : "moe_router_logits", torch::stack(scores, 0));
    model::addTensor(out, "moe_router_experts", torch::stack(experts, 0));
    model::addTensor(out, "moe_router_weights", torch::stack(weights, 0));
    model::addTensor(out, "moe_layer_indexes", torch::tensor(layers, torch::kInt64));
}

// The DeltaNet's intermediates and end-of-prompt state, as the Qwen3.5 fixtures name them.
void addDeltaNet(model::SafeTensorsWriter& out, const model::DecoderOutput& prefill, const model::TextConfig& text)
{
    std::vector<torch::Tensor> g, beta, core, recurrent, conv;
    std::vector<int64_t> linear;
    for (size_t k = 0; k < prefill.deltaTraces.size(); ++k) {
        g.push_back(prefill.deltaTraces[k].g);
        beta.push_back(prefill.deltaTraces[k].beta);
        core.push_back(prefill.deltaTraces[k].core);
        recurrent.push_back(prefill.deltaStates[k].recurrent);
        conv.push_back(prefill.deltaStates[k].conv);
    }
    for (int i = 0; i < text.layers; ++i)
        if (text.isLinear(i))
            linear.push_back(i);
    const std::vector<int> attention = text.attentionLayers();
    model::addTensor(out, "deltanet_g", torch::stack(g, 0));
    model::addTensor(out, "deltanet_beta", torch::stack(beta, 0));
    model::addTensor(out, "deltanet_core_outputs", torch::stack(core, 0));
    model::addTensor(out, "deltanet_recurrent_states", torch::stack(recurrent, 0));
    model::addTensor(out, "deltanet_conv_states", torch::stack(conv, 0));
    model::addTensor(out, "linear_attention_layer_indexes", torch::tensor(linear, torch::kInt64));
    model::addTensor(out, "full_attention_layer_indexes",
                     torch::tensor(std::vector<int64_t>(attention.begin(), attention.end()), torch::kInt64));
}

// Everything a run gives, under the fixtures' names.
QByteArray forwardOutputs(const model::ForwardResult& r, const model::ModelConfig& config)
{
    const std::vector<int> attentionLayers = config.text.attentionLayers();
    model::SafeTensorsWriter out;
    addPositions(out, r.layerTables[static_cast<size_t>(attentionLayers.front())]);
    if (r.imageEmbeds.defined())
        model::addTensor(out, "image_embeds", r.imageEmbeds);
    if (r.videoEmbeds.defined())
        model::addTensor(out, "video_embeds", r.videoEmbeds);
    if (!r.deepstackEmbeds.empty())
        model::addTensor(out, "deepstack_embeds", torch::stack(r.deepstackEmbeds, 0));
    model::addTensor(out, "inputs_embeds", r.inputsEmbeds.unsqueeze(0));
    model::addTensor(out, "decoder_layer_outputs", torch::stack(r.prefill.layerOutputs, 0).unsqueeze(1));
    model::addTensor(out, "final_norm_output", r.prefill.finalNorm.unsqueeze(0));
    model::addTensor(out, "logits", r.prefill.logits.unsqueeze(0));
    model::addTensor(out, "attentions", torch::stack(r.prefill.attentions, 0).unsqueeze(1));
    if (!r.prefill.routers.empty())
        addRouters(out, r.prefill.routers, config.text.moe.router == model::RouterKind::Softmax);
    if (static_cast<int>(attentionLayers.size()) < config.text.layers)
        addDeltaNet(out, r.prefill, config.text);
    if (r.generatedIds.defined() && r.generatedIds.numel() > 0) {
        model::addTensor(out, "generated_ids", r.generatedIds.unsqueeze(0));
        model::addTensor(out, "generated_logits", r.generatedLogits.unsqueeze(0));
    }
    return out.bytes();
}

void addForwardOptions(QCommandLineParser& parser)
{
    addGeometryOptions(parser);
    parser.addOptions({
        {"model", "Model folder (config.json, *.safetensors).", "DIR"},
        {"inputs",
         "input_ids, pixel_values, image_grid_thw; videos: pixel_values_videos, video_grid_thw; GLM-V: mm_token_type_ids "
         "(safetensors).",
         "IN"},
        {"output", "Where to write the outputs (safetensors).", "OUT"},
        {"generate", "Greedy tokens to generate after the prompt (default 5).", "N"},
        {"device", "cpu (default) or cuda.", "D"},
        {"dtype", "fp32 (default) or bf16.", "T"},
    });
}

} // namespace

int runForward(const QStringList& args)
{
    QCommandLineParser parser;
    addForwardOptions(parser);
    parseOrThrow(parser, args);
    for (const char* required : {"model", "inputs", "output"})
        if (!parser.isSet(required))
            throw UsageError(std::string("--") + required + " is required");
    if (parser.isSet("layout"))
        throw UsageError("--layout: forward derives the layout from input_ids and image_grid_thw");
    const int generate = parser.isSet("generate") ? parseInteger(parser, "generate") : 5;
    if (generate < 0 || generate > 4096)
        throw UsageError("--generate: expected 0 to 4096");
    const torch::Device device = parseDevice(parser);
    const torch::Dtype dtype = parseDtype(parser);

    return runModelCommand([&] {
        model::Vlm vlm(parser.value("model"), device, dtype);
        if (const std::string note = vlm.unusedNote(); !note.empty())
            std::fprintf(stderr, "note: %s: %s\n", qPrintable(parser.value("model")), note.c_str());
        const SchemeRequest scheme = parseModelSchemeOptions(parser, vlm.config().text.layers, model::ownSchemeKind(vlm.config()));
        model::ForwardRequest req = readForwardRequest(parser.value("inputs"), vlm.config());
        req.scheme = scheme.params;
        req.age = scheme.age;
        // The full L x L maps of every attention layer (Qwen3.5's DeltaNet layers have none): forward is the
        // explicit request for them.
        const std::vector<int> attentionLayers = vlm.config().text.attentionLayers();
        req.capture.layers = attentionLayers;
        req.capture.deltaNet = static_cast<int>(attentionLayers.size()) < vlm.config().text.layers;
        req.generate = generate;
        req.capture.allLogits = true; // the fixtures' logits are [1, L, vocab]
        req.capture.layerOutputs = true;
        req.capture.routers = vlm.config().text.moe.any();
        model::ForwardResult r;
        try {
            r = vlm.run(req);
        } catch (const model::BadRequest& e) {
            throw model::BadInputFile(parser.value("inputs").toStdString() + ": " + e.what());
        }
        writeOutput(parser.value("output"), forwardOutputs(r, vlm.config()));
        return 0;
    });
}

} // namespace ropescope::cli
