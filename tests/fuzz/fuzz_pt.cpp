// libFuzzer target: arbitrary bytes as a check-positions .pt dump (torch.save's zip or legacy form), read as the
// dump reader does: the ZIP directory, the bounded pickle machine, every storage and view checked before a byte
// of it is read; then every element of each wanted tensor is touched, so a view the checks let through that
// reaches outside its storage shows up under ASan.
#include "core/io/atomic_file.h"
#include "core/io/torch_save.h"
#include "core/io/torch_pickle.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const QByteArray bytes(reinterpret_cast<const char*>(data), static_cast<qsizetype>(size));
    try {
        const auto wanted = [](const std::string& name) { return name != "skipped"; };
        for (const auto& [name, t] : ropescope::io::readTorchSave(bytes, wanted, int64_t(1) << 20)) {
            const int width = ropescope::io::pickle::elementSize(t.dtype);
            std::vector<int64_t> index(t.shape.size(), 0);
            uint64_t sum = 0;
            for (int64_t k = 0; k < t.numel(); ++k) {
                int64_t at = t.offset;
                for (size_t d = 0; d < t.shape.size(); ++d)
                    at += index[d] * t.stride[d];
                uint8_t first = 0;
                std::memcpy(&first, t.storage.constData() + at * width, 1);
                std::memcpy(&first, t.storage.constData() + at * width + width - 1, 1);
                sum += first;
                for (size_t d = t.shape.size(); d-- > 0;)
                    if (++index[d] < t.shape[d])
                        break;
                    else
                        index[d] = 0;
            }
            (void)sum;
        }
    } catch (const ropescope::io::IoError&) { }
    return 0;
}
