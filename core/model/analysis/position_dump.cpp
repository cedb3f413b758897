#include "core/model/analysis/position_dump.h"

#include "core/io/input_file.h"
#include "core/io/npy.h"
#include "core/io/torch_save.h"
#include "core/io/zip_archive.h"
#include "core/model/engine/safetensors.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <type_traits>

namespace ropescope::model {
namespace {

constexpr long long kMaxDimension = int64_t(1) << 31;
constexpr int64_t kMaxElements = int64_t(1) << 28;

// The tensors checkBatch reads: every other key (pixel_values, labels) is skipped unread.
bool isCheckedKey(const std::string& name)
{
    static const std::set<std::string> keys{"input_ids",      "position_ids",   "attention_mask",     "rope_deltas",
                                            "image_grid_thw", "video_grid_thw", "second_per_grid_ts", "mm_token_type_ids"};
    return keys.count(name) > 0;
}

[[noreturn]] void bad(const QString& file, const std::string& what)
{
    throw BadInputFile(file.toStdString() + ": " + what);
}

// The elements of a strided view (C order over `shape`), each as T read from `base`: whole numbers in their own
// width (int64 as int64, so 2^62 stays 2^62; int32 ids stay 4 bytes each), reals into double, kept as whole
// numbers when every one is.
template <typename T> void fill(DumpTensor& t, const uint8_t* base, const std::vector<int64_t>& stride, int64_t offset)
{
    const auto n = static_cast<size_t>(t.numel());
    std::vector<int64_t> index(t.shape.size(), 0);
    int64_t at = offset;
    const auto next = [&] { // the odometer: the last dimension fastest
        for (size_t d = t.shape.size(); d-- > 0;) {
            at += stride[d];
            if (++index[d] < t.shape[d])
                return;
            at -= stride[d] * t.shape[d];
            index[d] = 0;
        }
    };
    const auto read = [&] {
        T v;
        std::memcpy(&v, base + static_cast<size_t>(at) * sizeof(T), sizeof(T));
        return v;
    };
    if constexpr (std::is_same_v<T, int64_t>) {
        t.ints.resize(n);
        for (size_t k = 0; k < n; ++k, next())
            t.ints[k] = read();
        return;
    } else if constexpr (std::is_integral_v<T>) {
        t.width = static_cast<int>(sizeof(T));
        t.narrowUnsigned = std::is_unsigned_v<T>;
        t.narrow.resize(n * sizeof(T));
        for (size_t k = 0; k < n; ++k, next()) {
            const T v = read();
            std::memcpy(t.narrow.data() + k * sizeof(T), &v, sizeof(T));
        }
        return;
    } else {
        t.reals.resize(n);
        for (size_t k = 0; k < n; ++k, next())
            t.reals[k] = static_cast<double>(read());
        t.integral = std::all_of(t.reals.begin(), t.reals.end(),
                                 [](double v) { return std::isfinite(v) && std::floor(v) == v && std::abs(v) < 9e15; });
        if (t.integral) { // whole numbers saved as floats: kept once, as whole numbers
            t.ints.assign(t.reals.begin(), t.reals.end());
            std::vector<double>().swap(t.reals);
        }
    }
}

std::vector<int64_t> contiguous(const std::vector<int64_t>& shape)
{
    std::vector<int64_t> stride(shape.size(), 1);
    for (size_t d = shape.size(); d-- > 1;)
        stride[d - 1] = stride[d] * shape[d];
    return stride;
}

// A tensor from the little-endian bytes of `dtype` ("i8", "f4", ...) that hold a view of `shape`, `stride` and
// `offset` (in elements): the view is checked to lie inside `bytes` before one is read.
DumpTensor tensorFrom(const QString& file, const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
                      const std::vector<int64_t>& stride, int64_t offset, const uint8_t* data, size_t bytes)
{
    DumpTensor t;
    t.shape = shape;
    int64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0 || d > kMaxDimension || (d > 0 && n > kMaxElements / d))
            bad(file, "'" + name + "' is larger than a dump's tensors can be (2^28 elements)");
        n *= d;
    }
    const std::map<std::string, size_t> sizes{{"i8", 8}, {"i4", 4}, {"i2", 2}, {"i1", 1}, {"u1", 1}, {"b1", 1}, {"f8", 8}, {"f4", 4}};
    const auto size = sizes.find(dtype);
    if (size == sizes.end())
        bad(file, "'" + name + "' has element type " + dtype + " (whole numbers or float32/64 are read)");
    if (n > 0) {
        int64_t last = offset, reach = 0; // the last element the view reaches
        bool outside = offset < 0;
        for (size_t d = 0; d < shape.size() && !outside; ++d)
            outside =
                stride[d] < 0 || __builtin_mul_overflow(shape[d] - 1, stride[d], &reach) || __builtin_add_overflow(last, reach, &last);
        if (outside || static_cast<uint64_t>(last) >= bytes / size->second)
            bad(file, "'" + name + "' reaches past the " + std::to_string(bytes) + " bytes that hold it");
    }
    if (dtype == "i8")
        fill<int64_t>(t, data, stride, offset);
    else if (dtype == "i4")
        fill<int32_t>(t, data, stride, offset);
    else if (dtype == "i2")
        fill<int16_t>(t, data, stride, offset);
    else if (dtype == "i1")
        fill<int8_t>(t, data, stride, offset);
    else if (dtype == "u1" || dtype == "b1")
        fill<uint8_t>(t, data, stride, offset);
    else if (dtype == "f8")
        fill<double>(t, data, stride, offset);
    else
        fill<float>(t, data, stride, offset);
    return t;
}

// A C-ordered tensor whose bytes must be exactly what its shape needs (safetensors, .npy).
DumpTensor denseTensor(const QString& file, const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
                       const uint8_t* data, size_t bytes)
{
    int64_t n = 1;
    for (int64_t d : shape)
        if (d < 0 || d > kMaxDimension || (d > 0 && n > kMaxElements / d))
            bad(file, "'" + name + "' is larger than a dump's tensors can be (2^28 elements)");
        else
            n *= d;
    const int64_t width = dtype.size() == 2 ? dtype[1] - '0' : 0;
    if (width > 0 && static_cast<uint64_t>(n * width) != bytes)
        bad(file, "'" + name + "' holds " + std::to_string(bytes) + " bytes, not the " + std::to_string(n * width) + " its shape needs");
    return tensorFrom(file, name, dtype, shape, contiguous(shape), 0, data, bytes);
}

// Counts a tensor's declared elements against the file's budget before it is read or inflated.
void spend(const QString& file, const std::string& name, int64_t elements, int64_t& left)
{
    if (elements < 0 || elements > left)
        bad(file,
            "'" + name + "' brings the elements read past " + std::to_string(kMaxDumpElements) +
                "; a dump file's checked tensors hold at most that many together (split the dump into smaller batches)");
    left -= elements;
}

int64_t declaredElements(const std::vector<int64_t>& shape)
{
    int64_t n = 1;
    for (int64_t d : shape)
        if (d < 0 || (d > 0 && n > kMaxElements / d))
            return -1;
        else
            n *= d;
    return n;
}

DumpBatch readSafetensorsBatch(const QString& file, const QByteArray& bytes)
{
    DumpBatch batch;
    batch.name = file;
    int64_t left = kMaxDumpElements;
    try {
        const SafeTensors st = SafeTensors::fromBytes(bytes, file);
        for (const TensorInfo& info : st.tensors()) {
            if (!isCheckedKey(info.name))
                continue;
            spend(file, info.name, declaredElements(info.shape), left);
            const char* dtype = info.dtype == DType::I64 ? "i8"
                : info.dtype == DType::I32               ? "i4"
                : info.dtype == DType::I16               ? "i2"
                : info.dtype == DType::I8                ? "i1"
                : info.dtype == DType::U8                ? "u1"
                : info.dtype == DType::Bool              ? "b1"
                : info.dtype == DType::F64               ? "f8"
                : info.dtype == DType::F32               ? "f4"
                                                         : dtypeName(info.dtype);
            batch.tensors[info.name] =
                denseTensor(file, info.name, dtype, info.shape, st.data(info), static_cast<size_t>(info.end - info.begin));
        }
    } catch (const BadInputFile&) {
        throw;
    } catch (const ModelError& e) {
        throw BadInputFile(e.what());
    }
    return batch;
}

DumpBatch readNpzBatch(const QString& file, const QByteArray& bytes)
{
    DumpBatch batch;
    batch.name = file;
    int64_t left = kMaxDumpElements;
    try {
        for (const io::ZipMember& member : io::listZipMembers(bytes)) {
            if (!member.name.endsWith(".npy") || !isCheckedKey(member.name.chopped(4).toStdString()))
                continue; // pixel_values and the like are never inflated
            const std::string name = member.name.chopped(4).toStdString();
            if (batch.tensors.count(name))
                bad(file, "the archive holds '" + name + "' twice");
            // The header first (inflating only it), its elements counted, then the data it declares.
            io::NpyHeader h;
            try {
                h = io::parseNpyHeader(io::zipMemberHead(bytes, member, 65536 + 12), kMaxDimension);
            } catch (const io::IoError& e) {
                bad(file, name + ": " + e.what());
            }
            const std::vector<int64_t> shape(h.shape.begin(), h.shape.end());
            const int64_t n = declaredElements(shape);
            spend(file, name, n, left);
            const int64_t width = h.dtype.size() == 2 ? h.dtype[1] - '0' : 0;
            if (static_cast<int64_t>(member.size) != h.dataOffset + n * width)
                bad(file,
                    name + ": the member holds " + std::to_string(member.size) + " bytes, not the " +
                        std::to_string(h.dataOffset + n * width) + " its .npy header declares");
            const QByteArray data = io::zipMemberBytes(bytes, member, member.size);
            batch.tensors[name] = denseTensor(file, name, h.dtype, shape, reinterpret_cast<const uint8_t*>(data.constData() + h.dataOffset),
                                              static_cast<size_t>(data.size() - h.dataOffset));
        }
    } catch (const io::IoError& e) {
        bad(file, e.what());
    }
    return batch;
}

// torch.save's dict of tensors, read by core/io/torch_save (never LibTorch's unpickler).
DumpBatch readTorchBatch(const QString& file, const QByteArray& bytes)
{
    DumpBatch batch;
    batch.name = file;
    std::map<std::string, io::SavedTensor> tensors;
    try {
        tensors = io::readTorchSave(bytes, isCheckedKey, kMaxDumpElements);
    } catch (const io::IoError& e) {
        bad(file, e.what());
    }
    for (const auto& [name, t] : tensors)
        batch.tensors[name] = tensorFrom(file, name, t.dtype, t.shape, t.stride, t.offset,
                                         reinterpret_cast<const uint8_t*>(t.storage.constData()), static_cast<size_t>(t.storage.size()));
    return batch;
}

bool isDumpFile(const QString& name)
{
    return name.endsWith(".safetensors") || name.endsWith(".npz") || name.endsWith(".pt") || name.endsWith(".pth");
}

} // namespace

std::vector<QString> dumpFiles(const QString& path)
{
    const QFileInfo info(path);
    if (!info.exists())
        throw BadInputFile(path.toStdString() + ": no such file or folder");
    if (!info.isDir()) {
        if (!isDumpFile(path))
            throw BadInputFile(path.toStdString() + ": not a dump (.safetensors, .npz or .pt, or a folder of them)");
        return {path};
    }
    std::vector<QString> files;
    // QDir::System lists dangling links and FIFOs too: with a dump's name they are refused by name (a dangling
    // link here, readInputFile's "not a regular file" for the rest), not skipped into "no files".
    for (const QFileInfo& f : QDir(path).entryInfoList(QDir::Files | QDir::System, QDir::Name))
        if (isDumpFile(f.fileName())) {
            if (f.isSymLink() && !f.exists())
                throw BadInputFile(f.filePath().toStdString() + ": a symbolic link to " + f.symLinkTarget().toStdString() +
                                   ", which does not exist");
            if (static_cast<int>(files.size()) >= kMaxDumpFiles)
                throw BadInputFile(path.toStdString() + ": more than " + std::to_string(kMaxDumpFiles) + " dump files");
            files.push_back(f.filePath());
        }
    if (files.empty())
        throw BadInputFile(path.toStdString() + ": the folder holds no .safetensors, .npz or .pt files");
    return files;
}

DumpBatch readDumpBatch(const QString& file)
{
    QByteArray bytes;
    try {
        bytes = io::readInputFile(file, kMaxDumpFileBytes, "position dump");
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
    if (file.endsWith(".pt") || file.endsWith(".pth"))
        return readTorchBatch(file, bytes);
    return file.endsWith(".npz") ? readNpzBatch(file, bytes) : readSafetensorsBatch(file, bytes);
}

DumpCheck checkDump(const QString& dump, const PositionRule& rule, int keepPositionsFor, int keepListed,
                    const std::function<void(const DumpProgress&)>& progress, const std::function<bool()>& cancelled)
{
    struct Cancelled { };
    DumpCheck result;
    const std::vector<QString> files = dumpFiles(dump);
    DumpProgress where;
    where.files = static_cast<int64_t>(files.size());
    try {
        for (const QString& file : files) {
            if (cancelled && cancelled())
                throw Cancelled{};
            const DumpBatch batch = readDumpBatch(file);
            checkBatchEach(batch, rule, static_cast<int64_t>(result.differing.size()) < keepPositionsFor, [&](SampleCheck&& c) {
                ++result.samples;
                if (result.samples % 4096 == 0) {
                    where.samples = result.samples;
                    if (progress)
                        progress(where);
                    if (cancelled && cancelled())
                        throw Cancelled{};
                }
                if (c.kind == FaultKind::None)
                    return;
                ++result.differingTotal;
                ++result.kinds[faultKindName(c.kind)];
                if (static_cast<int64_t>(result.differing.size()) >= keepListed)
                    return; // counted, not kept: a dump of millions of samples is streamed
                if (static_cast<int64_t>(result.differing.size()) >= keepPositionsFor) { // only the figures need them
                    std::vector<int64_t>().swap(c.gotPositions);
                    std::vector<int64_t>().swap(c.expectedPositions);
                    std::vector<QString>().swap(c.segments);
                }
                result.differing.push_back(std::move(c));
            });
            ++result.batches;
            where.filesDone = result.batches;
            where.samples = result.samples;
            if (progress)
                progress(where);
        }
    } catch (const Cancelled&) {
        result.cancelled = true;
    }
    return result;
}

QJsonObject dumpCheckJson(const DumpCheck& check, const QString& family, const QString& dump)
{
    QJsonObject kinds;
    for (const auto& [k, n] : check.kinds)
        kinds[QString::fromStdString(k)] = static_cast<double>(n);
    QJsonArray samples;
    for (const SampleCheck& c : check.differing)
        samples.append(sampleCheckJson(c));
    QJsonObject o{{"family", family},
                  {"dump", dump},
                  {"batches", static_cast<double>(check.batches)},
                  {"samples", static_cast<double>(check.samples)},
                  {"differing", static_cast<double>(check.differingTotal)},
                  {"kinds", kinds},
                  {"differing_samples", samples}};
    if (static_cast<int64_t>(check.differing.size()) < check.differingTotal)
        o["differing_samples_listed"] = static_cast<double>(check.differing.size()); // the first ones; the counts are all
    return o;
}

} // namespace ropescope::model
