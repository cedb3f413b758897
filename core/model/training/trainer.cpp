#include "core/model/training/trainer.h"

#include "core/geometry/age.h"
#include "core/model/engine/image_processor.h"
#include "core/model/engine/tensor_io.h"
#include "core/model/engine/tokenizer.h"
#include "core/model/engine/vlm.h"
#include "core/model/training/synthetic_task.h"
#include "core/model/training/tiny_model.h"

#include <torch/types.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adamw.h>
#include <torch/nn/utils/clip_grad.h>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QSaveFile>
#include <QTemporaryDir>

#include <chrono>
#include <cmath>

namespace ropescope::model {
namespace {

struct Batch {
    torch::Tensor pixels, grid, ids, last, target;
    torch::Tensor cellColour, cellShape; // [B * 64]; an empty cell: the class after the last word
};

// Right-padded after the question: every sample shares one layout, and causal attention never lets a real
// token see the pads. The answer is predicted at each sample's last question token.
Batch makeBatch(const Tokenizer& tok, const VisionConfig& vision, uint64_t seed, uint64_t first, int size)
{
    std::vector<std::vector<int64_t>> ids;
    std::vector<torch::Tensor> pixels;
    std::vector<int64_t> targets, colours, shapes;
    size_t longest = 0;
    for (int i = 0; i < size; ++i) {
        const SyntheticSample s = SyntheticTask::trainingSample(seed, first + static_cast<uint64_t>(i));
        ids.push_back(tok.encode(imagePrompt(tok, s.question, {SyntheticTask::kGrid * SyntheticTask::kGrid})));
        longest = std::max(longest, ids.back().size());
        pixels.push_back(preprocessImage(s.image, vision).pixels);
        targets.push_back(tok.tokenId(s.answer.toStdString()).value());
        // An empty cell's target is the "none" class after the words (see the cell-naming loss).
        const int64_t noColour = SyntheticTask::colours().size(), noShape = SyntheticTask::shapes().size();
        for (size_t c = 0; c < s.cellColour.size(); ++c) {
            colours.push_back(s.cellColour[c] < 0 ? noColour : s.cellColour[c]);
            shapes.push_back(s.cellShape[c] < 0 ? noShape : s.cellShape[c]);
        }
    }
    Batch b;
    auto padded = torch::zeros({size, static_cast<int64_t>(longest)}, torch::kInt64);
    std::vector<int64_t> last;
    for (int i = 0; i < size; ++i) {
        const auto& row = ids[static_cast<size_t>(i)];
        padded[i].narrow(0, 0, static_cast<int64_t>(row.size())).copy_(torch::tensor(row, torch::kInt64));
        last.push_back(static_cast<int64_t>(row.size()) - 1);
    }
    b.ids = padded;
    b.last = torch::tensor(last, torch::kInt64);
    b.target = torch::tensor(targets, torch::kInt64);
    b.cellColour = torch::tensor(colours, torch::kInt64);
    b.cellShape = torch::tensor(shapes, torch::kInt64);
    b.pixels = torch::cat(pixels, 0);
    const int64_t side = SyntheticTask::kGrid * vision.mergeSize;
    b.grid = torch::tensor({int64_t(1), side, side}).view({1, 3}).repeat({size, 1});
    return b;
}

// Token ids of task words, as an index tensor.
torch::Tensor wordIds(const Tokenizer& tok, const QStringList& words, torch::Device device)
{
    std::vector<int64_t> ids;
    for (const QString& w : words)
        ids.push_back(tok.tokenId(w.toStdString()).value());
    return torch::tensor(ids, torch::kInt64).to(device);
}

} // namespace

TrainResult train(const TrainOptions& o)
{
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    TrainResult result;
    QJsonObject training{{"steps", o.steps},
                         {"batch", o.batch},
                         {"seed", static_cast<double>(o.seed)},
                         {"from", o.from.isEmpty() ? QString("scratch") : QFileInfo(o.from).fileName()},
                         {"vision", o.from.isEmpty() || o.trainVision ? "trained" : "frozen"},
                         {"harope", o.harope}};
    if (!o.from.isEmpty()) // keep the history of a continued or fine-tuned model
        training["base_training"] = recordedTraining(o.from);

    // The model: a base checkpoint to fine-tune, or random weights with the tiny architecture.
    QTemporaryDir scratch;
    QString configPath = QDir(o.from).filePath("config.json");
    if (o.from.isEmpty()) {
        configPath = scratch.filePath("config.json");
        QFile f(configPath);
        if (!f.open(QIODevice::WriteOnly) || f.write(tinyConfigJson(o.scheme, training)) <= 0)
            throw ModelError("cannot write a scratch config");
    }
    Vlm vlm = o.from.isEmpty() ? Vlm(Checkpoint::random(configPath, o.seed), o.device) : Vlm(o.from, o.device);
    if (o.harope)
        vlm.language().addIdentityHarope();
    const ModelConfig& cfg = vlm.config();
    QTemporaryDir tokDir;
    writeTinyModelFiles(tokDir.path(), o.scheme, training);
    const Tokenizer tok = Tokenizer::load(QDir(tokDir.path()).filePath("tokenizer.json"));

    bool frozenVision = !o.from.isEmpty() && !o.trainVision;
    std::vector<torch::Tensor> params;
    for (auto& w : vlm.vision().weights()) {
        w.tensor->requires_grad_(!frozenVision);
        result.parameters += w.tensor->numel();
        if (!frozenVision)
            params.push_back(*w.tensor);
    }
    for (auto& [name, t] : vlm.language().weights()) {
        t->requires_grad_(true);
        result.parameters += t->numel();
        params.push_back(*t);
    }
    for (const auto& p : params)
        result.trainable += p.numel();
    // The cell-naming loss reads each merged image token through the tied LM head and asks it to name the
    // colour and the shape in its cell and, for every cell, its quadrant. Without it a from-scratch model
    // sits at chance for thousands of steps: question tokens cannot learn where to look before image
    // tokens say what they hold. A cell without an object's centre must name nothing: a "none" class whose
    // logit is fixed at 0, so every word's logit has to fall below it. Pictures drawn off the grid spill an
    // object into its neighbours' tokens; unless those tokens learn to say "not red", "how many are red"
    // counts the spill (count accuracy on the grid pictures fell 10 points when Varied pictures came in).
    const bool nameCells = !frozenVision && o.cellLoss > 0;
    const auto colourIds = wordIds(tok, SyntheticTask::colours(), o.device);
    const auto shapeIds = wordIds(tok, SyntheticTask::shapes(), o.device);
    const auto quadrantIds = wordIds(tok, SyntheticTask::quadrants(), o.device);
    std::vector<int64_t> quadrants;
    for (int row = 0; row < SyntheticTask::kGrid; ++row)
        for (int col = 0; col < SyntheticTask::kGrid; ++col)
            quadrants.push_back(SyntheticTask::quadrantOf(row, col));
    const auto cellQuadrant = torch::tensor(quadrants, torch::kInt64).repeat({o.batch}).to(o.device); // [B * 64]

    const double peakLr = o.lr > 0 ? o.lr : (o.from.isEmpty() ? 2e-3 : 1e-3);
    training["peak_lr"] = peakLr; // with the seed and steps, what a run needs to be repeated
    training["weight_decay"] = o.weightDecay;
    torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(peakLr).weight_decay(o.weightDecay));

    // Position tables per layer for the shared layout (text:1,image:8x8,text:n) are rebuilt when the
    // padded length changes.
    std::optional<geometry::AgeSchedule> age;
    if (!o.scheme.age.empty())
        age = geometry::parseAgeSchedule(o.scheme.age, cfg.text.layers);
    std::map<int64_t, std::vector<LayerRotary>> rotaryByLength;
    auto rotaryFor = [&](int64_t length) -> const std::vector<LayerRotary>& {
        auto it = rotaryByLength.find(length);
        if (it != rotaryByLength.end())
            return it->second;
        const int grid = SyntheticTask::kGrid;
        const geometry::Layout layout = geometry::parseLayout("text:1,image:" + std::to_string(grid) + "x" + std::to_string(grid) +
                                                              ",text:" + std::to_string(length - 1 - grid * grid));
        std::vector<LayerRotary> layers =
            vlm.layerTables(layout, o.scheme.params, age).mapPerLayer([&](const geometry::PositionTable& table) {
                return rotaryForTable(table, cfg.text, o.device, 0, length);
            });
        return rotaryByLength.emplace(length, std::move(layers)).first->second;
    };

    // Writes the folder: files first, weights last, so a killed run leaves no loadable half-model.
    auto save = [&](int stepsDone) {
        training["steps_done"] = stepsDone;
        training["seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
        training["train_accuracy_last_steps"] = result.finalAccuracy;
        training["parameters"] = static_cast<double>(result.parameters);
        training["trainable_parameters"] = static_cast<double>(result.trainable);
        writeTinyModelFiles(o.output, o.scheme, training);
        SafeTensorsWriter writer;
        writer.setMetadata("format", "pt");
        for (auto& w : vlm.vision().weights())
            addTensorAs(writer, w.name, w.tensor->detach().reshape(w.shape), DType::F16);
        for (auto& [name, t] : vlm.language().weights())
            addTensorAs(writer, name, t->detach(), DType::F16);
        QSaveFile f(QDir(o.output).filePath("model.safetensors"));
        const QByteArray bytes = writer.bytes();
        if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit())
            throw ModelError(o.output.toStdString() + "/model.safetensors: cannot write");
    };

    const int warmup = std::max(1, o.steps / 20);
    double lossSum = 0, accSum = 0, namingSum = 0;
    int window = 0;
    const int64_t tokensPerImage = SyntheticTask::kGrid * SyntheticTask::kGrid;
    for (int step = 1; step <= o.steps; ++step) {
        const double lr =
            step <= warmup ? peakLr * step / warmup : 0.5 * peakLr * (1 + std::cos(M_PI * (step - warmup) / std::max(1, o.steps - warmup)));
        for (auto& group : optimizer.param_groups())
            static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);

        const Batch b = makeBatch(tok, cfg.vision, o.seed, static_cast<uint64_t>(step - 1) * static_cast<uint64_t>(o.batch), o.batch);
        const int64_t B = b.ids.size(0), L = b.ids.size(1);
        if (o.visionSteps > 0 && step == o.visionSteps + 1 && !frozenVision) { // the vision tower has learnt what it needs: freeze it
            frozenVision = true;
            for (auto& w : vlm.vision().weights())
                w.tensor->requires_grad_(false);
        }
        VisionFeatures visionFeatures;
        if (frozenVision) {
            torch::NoGradGuard noGrad;
            visionFeatures = vlm.vision().forward(b.pixels.to(o.device), b.grid);
        } else {
            visionFeatures = vlm.vision().forward(b.pixels.to(o.device), b.grid);
        }
        const torch::Tensor& vision = visionFeatures.embeds;
        DeepStackInput deepstack; // Qwen3-VL bases: every sample's image sits at the same positions
        deepstack.positions = torch::arange(1, 1 + tokensPerImage, torch::TensorOptions().dtype(torch::kInt64).device(o.device));
        for (const auto& f : visionFeatures.deepstack)
            deepstack.features.push_back(f.view({B, tokensPerImage, -1}));
        auto embeds = vlm.language().embed(b.ids.flatten()).view({B, L, -1});
        embeds = torch::cat(
            {embeds.narrow(1, 0, 1), vision.view({B, tokensPerImage, -1}), embeds.narrow(1, 1 + tokensPerImage, L - 1 - tokensPerImage)},
            1);
        DecoderCapture capture;
        capture.allLogits = true;
        const auto out = vlm.language().forward(embeds, rotaryFor(L), nullptr, capture, deepstack.features.empty() ? nullptr : &deepstack);
        const auto logits = out.logits.index({torch::arange(B), b.last.to(o.device)}); // [B, vocab]
        const auto answerLoss = torch::nn::functional::cross_entropy(logits, b.target.to(o.device));
        auto loss = answerLoss;
        const bool naming = nameCells && !frozenVision;
        if (naming) {
            const auto cellLogits = vision.matmul(vlm.language().lmHead().t()); // [B * 64, vocab]
            namespace F = torch::nn::functional;
            // Cells with an object and empty cells weigh the same as groups (empty ones outnumber them 15:1).
            const auto occupied = (b.cellColour < static_cast<int64_t>(SyntheticTask::colours().size())).to(o.device);
            const auto nameLoss = [&](const torch::Tensor& ids, const torch::Tensor& target) {
                const auto words = cellLogits.index_select(1, ids);
                const auto perCell = F::cross_entropy(torch::cat({words, torch::zeros({words.size(0), 1}, words.options())}, 1),
                                                      target.to(o.device), F::CrossEntropyFuncOptions().reduction(torch::kNone));
                return perCell.masked_select(occupied).mean() + perCell.masked_select(occupied.logical_not()).mean();
            };
            const auto namingLoss = nameLoss(colourIds, b.cellColour) + nameLoss(shapeIds, b.cellShape) +
                F::cross_entropy(cellLogits.index_select(1, quadrantIds), cellQuadrant);
            loss = loss + o.cellLoss * namingLoss;
            namingSum += namingLoss.item<double>();
        }
        optimizer.zero_grad();
        loss.backward();
        torch::nn::utils::clip_grad_norm_(params, 1.0);
        optimizer.step();

        lossSum += answerLoss.item<double>();
        if (step <= 10)
            result.firstLoss += answerLoss.item<double>() / std::min(10, o.steps);
        accSum += (logits.argmax(-1).cpu() == b.target).to(torch::kFloat64).mean().item<double>();
        ++window;
        if (step % 50 == 0 || step == o.steps) {
            const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
            if (o.progress)
                o.progress(QString("step %1/%2 loss %3 acc %4%%5 lr %6 (%7 s)")
                               .arg(step)
                               .arg(o.steps)
                               .arg(lossSum / window, 0, 'f', 3)
                               .arg(100 * accSum / window, 0, 'f', 1)
                               .arg(naming ? QString(" cell-naming loss %1").arg(namingSum / window, 0, 'f', 3) : QString())
                               .arg(lr, 0, 'e', 2)
                               .arg(seconds, 0, 'f', 0));
            result.finalLoss = lossSum / window;
            result.finalAccuracy = accSum / window;
            lossSum = accSum = namingSum = 0;
            window = 0;
        }
        if (o.saveEvery > 0 && step % o.saveEvery == 0 && step < o.steps)
            save(step);
    }

    save(o.steps);
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
}

} // namespace ropescope::model
