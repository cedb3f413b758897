#include "core/model/analysis/position_dump.h"

#include "core/io/input_file.h"
#include "core/io/npy.h"
#include "core/io/zip_archive.h"
#include "core/model/engine/safetensors.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>

#include <cmath>
#include <cstring>

namespace ropescope::model {
namespace {

constexpr long long kMaxDimension = int64_t(1) << 31;
constexpr int64_t kMaxElements = int64_t(1) << 28;

[[noreturn]] void bad(const QString& file, const std::string& what)
{
    throw BadInputFile(file.toStdString() + ": " + what);
}

template <typename T> void fill(DumpTensor& t, const uint8_t* data)
{
    const auto n = static_cast<size_t>(t.numel());
    t.reals.resize(n);
    t.ints.resize(n);
    for (size_t k = 0; k < n; ++k) {
        T v;
        std::memcpy(&v, data + k * sizeof(T), sizeof(T));
        t.reals[k] = static_cast<double>(v);
        if (t.integral) {
            if (std::isfinite(t.reals[k]) && std::floor(t.reals[k]) == t.reals[k] && std::abs(t.reals[k]) < 9e15)
                t.ints[k] = static_cast<int64_t>(t.reals[k]);
            else
                t.integral = false;
        }
    }
}

// A tensor from raw little-endian bytes of `dtype` ("i8", "f4", ...).
DumpTensor tensorFrom(const QString& file, const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
                      const uint8_t* data, size_t bytes)
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
    if (bytes != static_cast<size_t>(n) * size->second)
        bad(file,
            "'" + name + "' holds " + std::to_string(bytes) + " bytes, not the " + std::to_string(static_cast<size_t>(n) * size->second) +
                " its shape needs");
    if (dtype == "i8")
        fill<int64_t>(t, data);
    else if (dtype == "i4")
        fill<int32_t>(t, data);
    else if (dtype == "i2")
        fill<int16_t>(t, data);
    else if (dtype == "i1")
        fill<int8_t>(t, data);
    else if (dtype == "u1" || dtype == "b1")
        fill<uint8_t>(t, data);
    else if (dtype == "f8")
        fill<double>(t, data);
    else
        fill<float>(t, data);
    return t;
}

DumpBatch readSafetensorsBatch(const QString& file, const QByteArray& bytes)
{
    DumpBatch batch;
    batch.name = file;
    try {
        const SafeTensors st = SafeTensors::fromBytes(bytes, file);
        for (const TensorInfo& info : st.tensors()) {
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
                tensorFrom(file, info.name, dtype, info.shape, st.data(info), static_cast<size_t>(info.end - info.begin));
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
    std::vector<std::pair<QString, QByteArray>> members;
    try {
        members = io::readZipMembers(bytes, kMaxDumpFileBytes);
    } catch (const io::IoError& e) {
        bad(file, e.what());
    }
    for (const auto& [member, data] : members) {
        if (!member.endsWith(".npy"))
            continue;
        const std::string name = member.chopped(4).toStdString();
        io::NpyHeader h;
        try {
            h = io::parseNpyHeader(data, kMaxDimension);
        } catch (const io::IoError& e) {
            bad(file, name + ": " + e.what());
        }
        const std::vector<int64_t> shape(h.shape.begin(), h.shape.end());
        batch.tensors[name] = tensorFrom(file, name, h.dtype, shape, reinterpret_cast<const uint8_t*>(data.constData() + h.dataOffset),
                                         static_cast<size_t>(data.size() - h.dataOffset));
    }
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
    for (const QFileInfo& f : QDir(path).entryInfoList(QDir::Files, QDir::Name))
        if (isDumpFile(f.fileName())) {
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
    if (file.endsWith(".pt") || file.endsWith(".pth"))
        return readTorchSaveBatch(file);
    QByteArray bytes;
    try {
        bytes = io::readInputFile(file, kMaxDumpFileBytes, "position dump");
    } catch (const io::IoError& e) {
        throw BadInputFile(e.what());
    }
    return file.endsWith(".npz") ? readNpzBatch(file, bytes) : readSafetensorsBatch(file, bytes);
}

DumpCheck checkDump(const QString& dump, const PositionRule& rule, int keepPositionsFor,
                    const std::function<void(int64_t, int64_t)>& progress, const std::function<bool()>& cancelled)
{
    DumpCheck result;
    const std::vector<QString> files = dumpFiles(dump);
    for (const QString& file : files) {
        if (cancelled && cancelled()) {
            result.cancelled = true;
            break;
        }
        for (SampleCheck& c : checkBatch(readDumpBatch(file), rule, keepPositionsFor > 0)) {
            ++result.samples;
            if (c.kind == FaultKind::None)
                continue;
            ++result.kinds[faultKindName(c.kind)];
            if (static_cast<int>(result.differing.size()) >= keepPositionsFor) { // only the figures need the positions
                c.gotPositions.clear();
                c.expectedPositions.clear();
                c.segments.clear();
            }
            result.differing.push_back(std::move(c));
        }
        ++result.batches;
        if (progress)
            progress(result.batches, static_cast<int64_t>(files.size()));
    }
    return result;
}

QJsonObject dumpCheckJson(const DumpCheck& check, const QString& family, const QString& dump)
{
    QJsonObject kinds;
    for (const auto& [k, n] : check.kinds)
        kinds[QString::fromStdString(k)] = n;
    QJsonArray samples;
    for (const SampleCheck& c : check.differing)
        samples.append(sampleCheckJson(c));
    return QJsonObject{{"family", family},
                       {"dump", dump},
                       {"batches", static_cast<double>(check.batches)},
                       {"samples", static_cast<double>(check.samples)},
                       {"differing", static_cast<double>(check.differing.size())},
                       {"kinds", kinds},
                       {"differing_samples", samples}};
}

} // namespace ropescope::model
