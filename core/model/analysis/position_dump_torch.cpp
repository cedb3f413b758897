// The .pt half of position dumps: torch.save of a dict of tensors, read with LibTorch's own unpickler
// (torch::pickle_load understands torch.save's zip archives), so no pickle is parsed by hand.
#include "core/io/input_file.h"
#include "core/model/analysis/position_dump.h"

#include <torch/torch.h>

#include <cmath>
#include <vector>

namespace ropescope::model {

DumpBatch readTorchSaveBatch(const QString& file)
{
    QByteArray bytes;
    try {
        bytes = io::readInputFile(file, kMaxDumpFileBytes, "position dump");
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
    c10::IValue value;
    try {
        value = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
    } catch (const c10::Error& e) {
        const std::string what = e.what_without_backtrace();
        throw BadInputFile(file.toStdString() + ": not a torch.save file LibTorch can read (" + what.substr(0, what.find('\n')) + ")");
    }
    if (!value.isGenericDict())
        throw BadInputFile(file.toStdString() +
                           ": torch.save of a dict of tensors was expected ({\"input_ids\": ..., \"position_ids\": ...})");
    DumpBatch batch;
    batch.name = file;
    for (const auto& entry : value.toGenericDict()) {
        if (!entry.key().isString() || !entry.value().isTensor())
            continue; // other entries of a training loop's dict (numbers, lists) are not the dump's
        const std::string name = entry.key().toStringRef();
        const torch::Tensor t = entry.value().toTensor().contiguous().cpu();
        if (t.numel() > (int64_t(1) << 28))
            throw BadInputFile(file.toStdString() + ": '" + name + "' is larger than a dump's tensors can be (2^28 elements)");
        DumpTensor d;
        d.shape = t.sizes().vec();
        const torch::Tensor reals = t.to(torch::kFloat64);
        d.reals.assign(reals.data_ptr<double>(), reals.data_ptr<double>() + reals.numel());
        if (torch::isIntegralType(t.scalar_type(), /*includeBool=*/true)) {
            const torch::Tensor ints = t.to(torch::kInt64);
            d.ints.assign(ints.data_ptr<int64_t>(), ints.data_ptr<int64_t>() + ints.numel());
        } else {
            d.ints.resize(d.reals.size());
            for (size_t k = 0; k < d.reals.size(); ++k) {
                const double v = d.reals[k];
                if (!std::isfinite(v) || std::floor(v) != v || std::abs(v) >= 9e15) {
                    d.integral = false;
                    break;
                }
                d.ints[k] = static_cast<int64_t>(v);
            }
        }
        batch.tensors[name] = std::move(d);
    }
    return batch;
}

} // namespace ropescope::model
