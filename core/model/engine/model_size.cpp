#include "core/model/engine/model_size.h"

#include "core/model/engine/host_allocator.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace ropescope::model {
namespace {

// Every product in doubles: the config's integers are each in range, their products need not fit an int.
double attentionParameters(const TextConfig& t)
{
    const double h = t.hidden, d = t.headDim(), q = double(t.heads) * d, kv = double(t.kvHeads) * d;
    return h * q * (t.attentionOutputGate ? 2.0 : 1.0) + 2.0 * h * kv + q * h;
}

double deltaNetParameters(const TextConfig& t)
{
    const double h = t.hidden, keys = double(t.linearKeyHeads) * t.linearKeyDim, values = double(t.linearValueHeads) * t.linearValueDim;
    return h * (2.0 * keys + values) + h * values + values * h; // q, k, v; the output gate z; the output projection
}

double mlpParameters(const TextConfig& t, int layer)
{
    const double h = t.hidden;
    if (!t.moe.isSparse(layer))
        return 3.0 * h * t.intermediate;
    const MoeConfig& m = t.moe;
    return double(m.experts) * (3.0 * h * m.intermediate + h) + 3.0 * h * m.sharedIntermediate;
}

double visionParameters(const VisionConfig& v)
{
    const double w = v.width, merged = w * v.mergeSize * v.mergeSize;
    const double blocks = double(v.depth) * (4.0 * w * w + 2.0 * w * v.mlpHidden);
    const double positions = double(v.positionEmbeddings) * w; // the learned table (Qwen3-VL, GLM-V, SigLIP)
    return double(v.patchDim()) * w + blocks + merged * merged + merged * v.outHidden + positions;
}

} // namespace

double weightParameters(const ModelConfig& config)
{
    const TextConfig& t = config.text;
    double n = double(t.vocab) * t.hidden * (t.tieEmbeddings ? 1.0 : 2.0);
    for (int layer = 0; layer < t.layers; ++layer)
        n += (t.isLinear(layer) ? deltaNetParameters(t) : attentionParameters(t)) + mlpParameters(t, layer);
    return n + visionParameters(config.vision);
}

// The address space this process already maps (its libraries: LibTorch's alone are gigabytes of it), which an
// address-space limit counts against the weights too.
double mappedBytes()
{
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    const bool read = f && std::fscanf(f, "%lu", &pages) == 1;
    if (f)
        std::fclose(f);
    return read ? double(pages) * double(sysconf(_SC_PAGE_SIZE)) : 0.0;
}

double usableMemoryBytes()
{
    double memory = physicalMemoryBytes();
    for (int resource : {RLIMIT_AS, RLIMIT_DATA}) {
        rlimit limit{};
        if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY)
            continue;
        const double left = std::max(0.0, double(limit.rlim_cur) - (resource == RLIMIT_AS ? mappedBytes() : 0.0));
        memory = memory > 0 ? std::min(memory, left) : left;
    }
    return memory;
}

void refuseWeightsOverMemory(const ModelConfig& config, int bytesPerParameter, const std::string& what)
{
    const double bytes = weightParameters(config) * bytesPerParameter, memory = usableMemoryBytes();
    if (memory <= 0 || bytes <= memory)
        return;
    char text[240];
    const double physical = physicalMemoryBytes();
    const char* dtype = bytesPerParameter == 2 ? "bf16" : "fp32";
    if (physical > 0 && memory < physical)
        std::snprintf(text, sizeof text, ": %.1f GB of weights at %s; this process may use %.1f GB of this machine's %.1f GB (its ulimit)",
                      bytes / 1e9, dtype, memory / 1e9, physical / 1e9);
    else
        std::snprintf(text, sizeof text, ": %.1f GB of weights at %s; this machine has %.1f GB (a smaller config, --layers N or bf16)",
                      bytes / 1e9, dtype, memory / 1e9);
    throw BadInputFile(what + text);
}

} // namespace ropescope::model
