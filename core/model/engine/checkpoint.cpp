#include "core/model/engine/checkpoint.h"

#include <algorithm>

#include "core/io/input_file.h"

#include "core/model/engine/tensor_io.h"

#include <torch/types.h>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>

#include <set>
#include <sstream>

namespace ropescope::model {
namespace {

std::string shapeText(c10::IntArrayRef shape)
{
    std::ostringstream s;
    s << '[';
    for (size_t i = 0; i < shape.size(); ++i)
        s << (i ? "," : "") << shape[i];
    s << ']';
    return s.str();
}

// The same weight under the other naming layout, if any.
std::vector<std::string> aliases(const std::string& name)
{
    std::vector<std::string> out{name};
    auto swapPrefix = [&](const std::string& from, const std::string& to) {
        if (name.rfind(from, 0) == 0)
            out.push_back(to + name.substr(from.size()));
    };
    swapPrefix("model.", "model.language_model.");
    swapPrefix("visual.", "model.visual.");
    // Gemma 3's transformers-4 layout (the Hub's): language_model.model.*, vision_tower.*, multi_modal_projector.*
    swapPrefix("model.", "language_model.model.");
    swapPrefix("lm_head.", "language_model.lm_head.");
    swapPrefix("model.vision_tower.", "vision_tower.");
    swapPrefix("model.multi_modal_projector.", "multi_modal_projector.");
    swapPrefix("model.embed_vision.", "embed_vision.");
    return out;
}

} // namespace

Checkpoint Checkpoint::open(const QString& dirPath)
{
    Checkpoint c;
    const QDir dir(dirPath);
    if (!dir.exists())
        throw BadInputFile(dirPath.toStdString() + ": no such model folder");
    c.dir_ = dirPath;
    c.config_ = loadModelConfig(dir.filePath("config.json"));

    QStringList files;
    const QString index = dir.filePath("model.safetensors.index.json");
    if (QFile::exists(index)) {
        QByteArray bytes;
        try {
            bytes = io::readInputFile(index, 64 << 20, "safetensors index");
        } catch (const io::IoError& e) {
            throw BadInputFile(e.what());
        }
        const QJsonObject map = QJsonDocument::fromJson(bytes).object()["weight_map"].toObject();
        if (map.isEmpty())
            throw BadInputFile(index.toStdString() + ": no weight_map");
        std::set<QString> shards;
        for (auto it = map.begin(); it != map.end(); ++it) {
            const QString shard = it.value().toString();
            if (shard.isEmpty() || shard.contains('/') || shard.contains(".."))
                throw BadInputFile(index.toStdString() + ": bad shard name for '" + it.key().toStdString() + "'");
            shards.insert(shard);
        }
        for (const QString& s : shards)
            files << dir.filePath(s);
    } else if (QFile::exists(dir.filePath("model.safetensors"))) {
        files << dir.filePath("model.safetensors");
    } else {
        throw BadInputFile(dirPath.toStdString() + ": no model.safetensors or model.safetensors.index.json");
    }
    for (const QString& path : files) {
        c.files_.push_back(std::make_unique<SafeTensors>(SafeTensors::open(path)));
        for (const TensorInfo& t : c.files_.back()->tensors())
            c.tensors_[t.name] = {c.files_.back().get(), &t};
    }
    c.config_.harope = c.has("model.layers.0.self_attn.harope.a_u");
    for (const auto& [name, where] : c.tensors_)
        if (name.rfind("mtp.", 0) == 0 || name.rfind("model.mtp.", 0) == 0)
            ++c.unusedMtp_;
    return c;
}

Checkpoint Checkpoint::random(const QString& configPath, uint64_t seed, int layers, bool bf16Values)
{
    Checkpoint c;
    c.dir_ = configPath;
    c.config_ = loadModelConfig(configPath);
    TextConfig& t = c.config_.text;
    if (layers > 0 && layers < t.layers) {
        // Gemma's kinds follow the kept layers; KV sharing keeps only the shared layers that are kept (the last ones).
        if (!t.slidingLayers.empty())
            t.slidingLayers.resize(static_cast<size_t>(layers));
        t.kvSharedLayers = std::max(0, t.kvSharedLayers - (t.layers - layers));
        t.layers = layers;
        if (!t.linearLayers.empty())
            t.linearLayers.resize(static_cast<size_t>(layers));
        if (t.moe.any())
            t.moe.sparseLayers.resize(static_cast<size_t>(layers));
        if (t.attentionLayers().empty()) // a hybrid's first layers are DeltaNet: the last kept one attends, so the views have a layer
            t.linearLayers.back() = false;
    }
    c.random_ = true;
    c.bf16Values_ = bf16Values;
    c.seed_ = seed;
    return c;
}

const std::pair<const SafeTensors*, const TensorInfo*> Checkpoint::locate(const std::string& name) const
{
    for (const std::string& alias : aliases(name))
        if (const auto it = tensors_.find(alias); it != tensors_.end())
            return it->second;
    return {nullptr, nullptr};
}

bool Checkpoint::has(const std::string& name) const
{
    if (random_) // every weight the architecture needs, except HARoPE maps and a tied head
        return name.find("harope") == std::string::npos && !(name == "lm_head.weight" && config_.text.tieEmbeddings);
    return locate(name).first != nullptr;
}

std::vector<int64_t> Checkpoint::storedShape(const std::string& name) const
{
    const auto [file, info] = locate(name);
    return info && !random_ ? info->shape : std::vector<int64_t>{};
}

torch::Tensor Checkpoint::tensor(const std::string& name, const std::vector<int64_t>& shape) const
{
    if (random_) {
        torch::manual_seed(seed_ + std::hash<std::string>{}(name));
        if (shape.size() == 1) {
            const bool isNorm = name.find("norm") != std::string::npos || name.find("ln_q") != std::string::npos;
            const bool isBias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
            if (isNorm) // LayerNorm/RMSNorm start as the identity: scale 1, shift 0
                return isBias ? torch::zeros(shape) : torch::ones(shape);
            return torch::randn(shape) * 0.02;
        }
        int64_t fanIn = 1;
        for (size_t i = 1; i < shape.size(); ++i)
            fanIn *= shape[i];
        const auto matrix = torch::randn(shape) / std::sqrt(static_cast<double>(fanIn));
        return bf16Values_ ? matrix.to(torch::kBFloat16).to(torch::kFloat32) : matrix;
    }
    const auto [file, info] = locate(name);
    if (!file)
        throw BadInputFile(dir_.toStdString() + ": missing tensor '" + name + "'");
    if (info->shape != shape)
        throw BadInputFile(file->path().toStdString() + ": tensor '" + info->name + "' has shape " + shapeText(info->shape) +
                           ", expected " + shapeText(shape));
    return toTorch(*file, *info);
}

std::string Checkpoint::firstNonFiniteTensor() const
{
    if (random_)
        return {};
    for (const auto& [name, where] : tensors_) {
        const auto t = toTorch(*where.first, *where.second);
        if (t.is_floating_point() && !torch::isfinite(t).all().item<bool>())
            return name;
    }
    return {};
}

} // namespace ropescope::model
