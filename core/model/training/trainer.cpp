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
#include <map>
#include <optional>

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

// What the model folder's config records of the run (with the seed and steps, what a run needs to be repeated).
QJsonObject trainingRecord(const TrainOptions& o)
{
    QJsonObject training{{"steps", o.steps},
                         {"batch", o.batch},
                         {"seed", static_cast<double>(o.seed)},
                         {"from", o.from.isEmpty() ? QString("scratch") : QFileInfo(o.from).fileName()},
                         {"vision", o.from.isEmpty() || o.trainVision ? "trained" : "frozen"},
                         {"harope", o.harope}};
    if (!o.from.isEmpty()) // keep the history of a continued or fine-tuned model
        training["base_training"] = recordedTraining(o.from);
    return training;
}

// The model: a base checkpoint to fine-tune, or random weights with the tiny architecture (its config written
// into `scratch`).
Vlm startingModel(const TrainOptions& o, const QJsonObject& training, const QTemporaryDir& scratch)
{
    QString configPath = QDir(o.from).filePath("config.json");
    if (o.from.isEmpty()) {
        configPath = scratch.filePath("config.json");
        QFile f(configPath);
        if (!f.open(QIODevice::WriteOnly) || f.write(tinyConfigJson(o.scheme, training)) <= 0)
            throw ModelError("cannot write a scratch config");
    }
    return o.from.isEmpty() ? Vlm(Checkpoint::random(configPath, o.seed), o.device) : Vlm(o.from, o.device);
}

// The tensors the optimiser updates (the vision tower's only while it trains); counts every weight into `result`.
std::vector<torch::Tensor> trainableParameters(Vlm& vlm, bool frozenVision, TrainResult& result)
{
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
    return params;
}

// The cell-naming loss reads each merged image token through the tied LM head and asks it to name the
// colour and the shape in its cell and, for every cell, its quadrant. Without it a from-scratch model
// sits at chance for thousands of steps: question tokens cannot learn where to look before image
// tokens say what they hold. A cell without an object's centre must name nothing: a "none" class whose
// logit is fixed at 0, so every word's logit has to fall below it. Pictures drawn off the grid spill an
// object into its neighbours' tokens; unless those tokens learn to say "not red", "how many are red"
// counts the spill (count accuracy on the grid pictures fell 10 points when Varied pictures came in).
class CellNaming {
public:
    CellNaming(const Tokenizer& tok, int batch, torch::Device device)
        : colourIds_(wordIds(tok, SyntheticTask::colours(), device)), shapeIds_(wordIds(tok, SyntheticTask::shapes(), device)),
          quadrantIds_(wordIds(tok, SyntheticTask::quadrants(), device)), device_(device)
    {
        std::vector<int64_t> quadrants;
        for (int row = 0; row < SyntheticTask::kGrid; ++row)
            for (int col = 0; col < SyntheticTask::kGrid; ++col)
                quadrants.push_back(SyntheticTask::quadrantOf(row, col));
        cellQuadrant_ = torch::tensor(quadrants, torch::kInt64).repeat({batch}).to(device); // [B * 64]
    }

    // `vision`: the batch's image tokens [B * 64, hidden]; `lmHead`: [vocab, hidden].
    torch::Tensor loss(const torch::Tensor& vision, const torch::Tensor& lmHead, const Batch& b) const
    {
        const auto cellLogits = vision.matmul(lmHead.t()); // [B * 64, vocab]
        namespace F = torch::nn::functional;
        // Cells with an object and empty cells weigh the same as groups (empty ones outnumber them 15:1).
        const auto occupied = (b.cellColour < static_cast<int64_t>(SyntheticTask::colours().size())).to(device_);
        const auto nameLoss = [&](const torch::Tensor& ids, const torch::Tensor& target) {
            const auto words = cellLogits.index_select(1, ids);
            const auto perCell = F::cross_entropy(torch::cat({words, torch::zeros({words.size(0), 1}, words.options())}, 1),
                                                  target.to(device_), F::CrossEntropyFuncOptions().reduction(torch::kNone));
            return perCell.masked_select(occupied).mean() + perCell.masked_select(occupied.logical_not()).mean();
        };
        return nameLoss(colourIds_, b.cellColour) + nameLoss(shapeIds_, b.cellShape) +
            F::cross_entropy(cellLogits.index_select(1, quadrantIds_), cellQuadrant_);
    }

private:
    torch::Tensor colourIds_, shapeIds_, quadrantIds_, cellQuadrant_;
    torch::Device device_;
};

// Position tables per layer for the shared layout (text:1,image:8x8,text:n), rebuilt when the padded length
// changes.
class RotaryByLength {
public:
    RotaryByLength(const Vlm& vlm, const TrainOptions& o) : vlm_(vlm), o_(o)
    {
        if (!o.scheme.age.empty())
            age_ = geometry::parseAgeSchedule(o.scheme.age, vlm.config().text.layers);
    }

    const std::vector<LayerRotary>& operator()(int64_t length)
    {
        auto it = byLength_.find(length);
        if (it != byLength_.end())
            return it->second;
        const int grid = SyntheticTask::kGrid;
        const geometry::Layout layout = geometry::parseLayout("text:1,image:" + std::to_string(grid) + "x" + std::to_string(grid) +
                                                              ",text:" + std::to_string(length - 1 - grid * grid));
        std::vector<LayerRotary> layers =
            vlm_.layerTables(layout, o_.scheme.params, age_).mapPerLayer([&](const geometry::PositionTable& table) {
                return rotaryForTable(table, vlm_.config().text, o_.device, 0, length);
            });
        return byLength_.emplace(length, std::move(layers)).first->second;
    }

private:
    const Vlm& vlm_;
    const TrainOptions& o_;
    std::optional<geometry::AgeSchedule> age_;
    std::map<int64_t, std::vector<LayerRotary>> byLength_;
};

// Warmup (the first 5% of the steps, at least one) to the peak, then cosine decay to zero.
double learningRate(int step, int steps, int warmup, double peakLr)
{
    return step <= warmup ? peakLr * step / warmup : 0.5 * peakLr * (1 + std::cos(M_PI * (step - warmup) / std::max(1, steps - warmup)));
}

// One step's forward pass: the answer logits [B, vocab] at each sample's last question token, and the image
// tokens the vision tower made of the batch [B * 64, hidden] (with gradients only while it trains).
struct StepOutput {
    torch::Tensor logits, vision;
};

StepOutput forwardBatch(Vlm& vlm, const Batch& b, RotaryByLength& rotaryFor, bool frozenVision, torch::Device device)
{
    const int64_t B = b.ids.size(0), L = b.ids.size(1);
    const int64_t tokensPerImage = SyntheticTask::kGrid * SyntheticTask::kGrid;
    VisionFeatures visionFeatures;
    if (frozenVision) {
        torch::NoGradGuard noGrad;
        visionFeatures = vlm.vision().forward(b.pixels.to(device), b.grid);
    } else {
        visionFeatures = vlm.vision().forward(b.pixels.to(device), b.grid);
    }
    const torch::Tensor& vision = visionFeatures.embeds;
    DeepStackInput deepstack; // Qwen3-VL bases: every sample's image sits at the same positions
    deepstack.positions = torch::arange(1, 1 + tokensPerImage, torch::TensorOptions().dtype(torch::kInt64).device(device));
    for (const auto& f : visionFeatures.deepstack)
        deepstack.features.push_back(f.view({B, tokensPerImage, -1}));
    auto embeds = vlm.language().embed(b.ids.flatten()).view({B, L, -1});
    embeds = torch::cat(
        {embeds.narrow(1, 0, 1), vision.view({B, tokensPerImage, -1}), embeds.narrow(1, 1 + tokensPerImage, L - 1 - tokensPerImage)}, 1);
    DecoderCapture capture;
    capture.allLogits = true;
    const auto out = vlm.language().forward(embeds, rotaryFor(L), nullptr, capture, deepstack.features.empty() ? nullptr : &deepstack);
    return {out.logits.index({torch::arange(B), b.last.to(device)}), vision};
}

// Writes the folder: files first, weights last, so a killed run leaves no loadable half-model.
void writeModelFolder(const TrainOptions& o, Vlm& vlm, const QJsonObject& training)
{
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
}

// Sums over the steps since the last report (at most 50).
struct ReportWindow {
    double loss = 0, accuracy = 0, naming = 0;
    int steps = 0;
};

// Reports the window's means (through o.progress), keeps them as the run's final ones and starts a new window.
void reportWindow(const TrainOptions& o, int step, double lr, bool naming, double seconds, ReportWindow& w, TrainResult& result)
{
    if (o.progress)
        o.progress(QString("step %1/%2 loss %3 acc %4%%5 lr %6 (%7 s)")
                       .arg(step)
                       .arg(o.steps)
                       .arg(w.loss / w.steps, 0, 'f', 3)
                       .arg(100 * w.accuracy / w.steps, 0, 'f', 1)
                       .arg(naming ? QString(" cell-naming loss %1").arg(w.naming / w.steps, 0, 'f', 3) : QString())
                       .arg(lr, 0, 'e', 2)
                       .arg(seconds, 0, 'f', 0));
    result.finalLoss = w.loss / w.steps;
    result.finalAccuracy = w.accuracy / w.steps;
    w = ReportWindow();
}

} // namespace

TrainResult train(const TrainOptions& o)
{
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    TrainResult result;
    QJsonObject training = trainingRecord(o);
    QTemporaryDir scratch;
    Vlm vlm = startingModel(o, training, scratch);
    if (o.harope)
        vlm.language().addIdentityHarope();
    const ModelConfig& cfg = vlm.config();
    QTemporaryDir tokDir;
    writeTinyModelFiles(tokDir.path(), o.scheme, training);
    const Tokenizer tok = Tokenizer::load(QDir(tokDir.path()).filePath("tokenizer.json"));

    bool frozenVision = !o.from.isEmpty() && !o.trainVision;
    const std::vector<torch::Tensor> params = trainableParameters(vlm, frozenVision, result);
    const bool nameCells = !frozenVision && o.cellLoss > 0; // the cell-naming loss, while the vision tower trains
    const CellNaming cellNaming(tok, o.batch, o.device);

    const double peakLr = o.lr > 0 ? o.lr : (o.from.isEmpty() ? 2e-3 : 1e-3);
    training["peak_lr"] = peakLr; // with the seed and steps, what a run needs to be repeated
    training["weight_decay"] = o.weightDecay;
    torch::optim::AdamW optimizer(params, torch::optim::AdamWOptions(peakLr).weight_decay(o.weightDecay));
    RotaryByLength rotaryFor(vlm, o);

    const auto save = [&](int stepsDone) {
        training["steps_done"] = stepsDone;
        training["seconds"] = std::chrono::duration<double>(Clock::now() - start).count();
        training["train_accuracy_last_steps"] = result.finalAccuracy;
        training["parameters"] = static_cast<double>(result.parameters);
        training["trainable_parameters"] = static_cast<double>(result.trainable);
        writeModelFolder(o, vlm, training);
    };

    const int warmup = std::max(1, o.steps / 20);
    ReportWindow window;
    for (int step = 1; step <= o.steps; ++step) {
        const double lr = learningRate(step, o.steps, warmup, peakLr);
        for (auto& group : optimizer.param_groups())
            static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);

        const Batch b = makeBatch(tok, cfg.vision, o.seed, static_cast<uint64_t>(step - 1) * static_cast<uint64_t>(o.batch), o.batch);
        if (o.visionSteps > 0 && step == o.visionSteps + 1 && !frozenVision) { // the vision tower has learnt what it needs: freeze it
            frozenVision = true;
            for (auto& w : vlm.vision().weights())
                w.tensor->requires_grad_(false);
        }
        const StepOutput out = forwardBatch(vlm, b, rotaryFor, frozenVision, o.device);
        const auto answerLoss = torch::nn::functional::cross_entropy(out.logits, b.target.to(o.device));
        auto loss = answerLoss;
        const bool naming = nameCells && !frozenVision;
        if (naming) {
            const auto namingLoss = cellNaming.loss(out.vision, vlm.language().lmHead(), b);
            loss = loss + o.cellLoss * namingLoss;
            window.naming += namingLoss.item<double>();
        }
        optimizer.zero_grad();
        loss.backward();
        torch::nn::utils::clip_grad_norm_(params, 1.0);
        optimizer.step();

        window.loss += answerLoss.item<double>();
        if (step <= 10)
            result.firstLoss += answerLoss.item<double>() / std::min(10, o.steps);
        window.accuracy += (out.logits.argmax(-1).cpu() == b.target).to(torch::kFloat64).mean().item<double>();
        ++window.steps;
        if (step % 50 == 0 || step == o.steps)
            reportWindow(o, step, lr, naming, std::chrono::duration<double>(Clock::now() - start).count(), window, result);
        if (o.saveEvery > 0 && step % o.saveEvery == 0 && step < o.steps)
            save(step);
    }

    save(o.steps);
    result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return result;
}

} // namespace ropescope::model
