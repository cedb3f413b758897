#include "core/model/engine/safetensors.h"

#include "core/geometry/errors.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ropescope::model {
namespace {

constexpr uint64_t kMaxHeader = 100ull << 20; // the format's own limit is 100 MB
constexpr size_t kMaxRank = 16;

struct DTypeName {
    const char* name;
    DType dtype;
    size_t size;
};
constexpr DTypeName kDTypes[] = {{"F64", DType::F64, 8}, {"F32", DType::F32, 4},  {"F16", DType::F16, 2}, {"BF16", DType::BF16, 2},
                                 {"I64", DType::I64, 8}, {"I32", DType::I32, 4},  {"I16", DType::I16, 2}, {"I8", DType::I8, 1},
                                 {"U8", DType::U8, 1},   {"BOOL", DType::Bool, 1}};

std::string str(const QString& s)
{
    return s.toStdString();
}

} // namespace

const char* dtypeName(DType d)
{
    for (const auto& t : kDTypes)
        if (t.dtype == d)
            return t.name;
    return "?";
}

SafeTensors SafeTensors::open(const QString& path)
{
    SafeTensors st;
    st.path_ = path;
    // O_NONBLOCK: a FIFO must not block the open; the fstat below refuses it.
    const int fd = ::open(QFile::encodeName(path).constData(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        throw BadInputFile(str(path) + ": cannot open: " + std::strerror(errno));
    struct stat info { };
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        ::close(fd);
        throw BadInputFile(str(path) + ": not a regular file");
    }
    const auto size = static_cast<uint64_t>(info.st_size);
    if (size < 8) {
        ::close(fd);
        throw BadInputFile(str(path) + ": truncated safetensors file (" + std::to_string(size) + " bytes)");
    }
    void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED)
        throw BadInputFile(str(path) + ": cannot map: " + std::strerror(errno));
    st.storage_ = std::shared_ptr<void>(map, [size](void* p) { ::munmap(p, size); });
    st.parse(static_cast<const uint8_t*>(map), size);
    return st;
}

SafeTensors SafeTensors::fromBytes(QByteArray bytes, const QString& name)
{
    SafeTensors st;
    st.path_ = name;
    auto held = std::make_shared<QByteArray>(std::move(bytes));
    st.storage_ = held;
    st.parse(reinterpret_cast<const uint8_t*>(held->constData()), static_cast<uint64_t>(held->size()));
    return st;
}

void SafeTensors::parse(const uint8_t* bytes, uint64_t size)
{
    const std::string file = str(path_);
    if (size < 8)
        throw BadInputFile(file + ": truncated safetensors file (" + std::to_string(size) + " bytes)");
    uint64_t headerSize = 0;
    for (int i = 7; i >= 0; --i)
        headerSize = (headerSize << 8) | bytes[i];
    if (headerSize > kMaxHeader || headerSize > size - 8)
        throw BadInputFile(file + ": header length " + std::to_string(headerSize) + " exceeds the file (" + std::to_string(size) +
                           " bytes) or the 100 MB limit");
    data_ = bytes + 8 + headerSize;
    dataSize_ = size - 8 - headerSize;

    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(
        QByteArray::fromRawData(reinterpret_cast<const char*>(bytes + 8), static_cast<qsizetype>(headerSize)), &error);
    if (doc.isNull() || !doc.isObject())
        throw BadInputFile(file + ": header is not a JSON object (" + str(error.errorString()) + ")");
    const QJsonObject header = doc.object();

    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string name = str(it.key());
        if (name == "__metadata__") {
            if (!it.value().isObject())
                throw BadInputFile(file + ": __metadata__ must be an object of strings");
            const QJsonObject meta = it.value().toObject();
            for (auto m = meta.begin(); m != meta.end(); ++m) {
                if (!m.value().isString())
                    throw BadInputFile(file + ": __metadata__ values must be strings");
                metadata_[str(m.key())] = str(m.value().toString());
            }
            continue;
        }
        const std::string where = file + ": tensor '" + name + "'";
        if (!it.value().isObject())
            throw BadInputFile(where + ": entry is not an object");
        const QJsonObject entry = it.value().toObject();
        TensorInfo t;
        t.name = name;
        const QString dtype = entry["dtype"].toString();
        const auto known = std::find_if(std::begin(kDTypes), std::end(kDTypes), [&](const DTypeName& d) { return dtype == d.name; });
        if (known == std::end(kDTypes))
            throw BadInputFile(where + ": unsupported dtype '" + str(dtype) + "'");
        t.dtype = known->dtype;

        const QJsonArray shape = entry["shape"].toArray();
        if (!entry["shape"].isArray() || static_cast<size_t>(shape.size()) > kMaxRank)
            throw BadInputFile(where + ": shape must be an array of at most 16 dimensions");
        // Byte size computed with overflow checks: a hostile shape must not wrap around.
        uint64_t bytesNeeded = known->size;
        for (const QJsonValue& d : shape) {
            const double v = d.toDouble(-1);
            if (!d.isDouble() || v < 0 || v != static_cast<double>(static_cast<int64_t>(v)) || v > 9.0e15)
                throw BadInputFile(where + ": shape entries must be non-negative integers");
            const auto dim = static_cast<uint64_t>(v);
            if (dim != 0 && bytesNeeded > std::numeric_limits<uint64_t>::max() / dim)
                throw BadInputFile(where + ": shape is too large");
            bytesNeeded *= dim;
            t.shape.push_back(static_cast<int64_t>(dim));
        }
        const QJsonArray offsets = entry["data_offsets"].toArray();
        if (offsets.size() != 2 || !offsets[0].isDouble() || !offsets[1].isDouble())
            throw BadInputFile(where + ": data_offsets must be [begin, end]");
        const double b = offsets[0].toDouble(), e = offsets[1].toDouble();
        // Range first: converting a double at or above 2^64 to uint64_t is undefined.
        if (!(b >= 0 && e >= b && e <= static_cast<double>(dataSize_)))
            throw BadInputFile(where + ": data_offsets [" + geometry::shortNumber(b) + ", " + geometry::shortNumber(e) +
                               "] fall outside the data section (" + std::to_string(dataSize_) + " bytes)");
        if (b != std::floor(b) || e != std::floor(e))
            throw BadInputFile(where + ": data_offsets must be whole numbers");
        t.begin = static_cast<uint64_t>(b);
        t.end = static_cast<uint64_t>(e);
        if (t.end - t.begin != bytesNeeded)
            throw BadInputFile(where + ": " + std::to_string(t.end - t.begin) + " bytes for shape needing " + std::to_string(bytesNeeded));
        index_[name] = tensors_.size();
        tensors_.push_back(std::move(t));
    }

    std::vector<const TensorInfo*> byOffset;
    for (const TensorInfo& t : tensors_)
        byOffset.push_back(&t);
    std::sort(byOffset.begin(), byOffset.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->begin < b->begin; });
    for (size_t i = 1; i < byOffset.size(); ++i)
        if (byOffset[i]->begin < byOffset[i - 1]->end)
            throw BadInputFile(file + ": tensors '" + byOffset[i - 1]->name + "' and '" + byOffset[i]->name + "' overlap");
}

const TensorInfo* SafeTensors::find(const std::string& name) const
{
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& SafeTensors::get(const std::string& name) const
{
    if (const TensorInfo* t = find(name))
        return *t;
    throw BadInputFile(str(path_) + ": missing tensor '" + name + "'");
}

void SafeTensorsWriter::add(const std::string& name, DType dtype, const std::vector<int64_t>& shape, const void* data, size_t bytes)
{
    entries_.push_back({name, dtype, shape, QByteArray(static_cast<const char*>(data), static_cast<qsizetype>(bytes))});
}

QByteArray SafeTensorsWriter::bytes() const
{
    QJsonObject header;
    if (!metadata_.empty()) {
        QJsonObject meta;
        for (const auto& [k, v] : metadata_)
            meta[QString::fromStdString(k)] = QString::fromStdString(v);
        header["__metadata__"] = meta;
    }
    qint64 offset = 0;
    for (const Entry& e : entries_) {
        QJsonArray shape;
        for (int64_t d : e.shape)
            shape.append(static_cast<double>(d));
        header[QString::fromStdString(e.name)] =
            QJsonObject{{"dtype", dtypeName(e.dtype)},
                        {"shape", shape},
                        {"data_offsets", QJsonArray{static_cast<double>(offset), static_cast<double>(offset + e.data.size())}}};
        offset += e.data.size();
    }
    QByteArray json = QJsonDocument(header).toJson(QJsonDocument::Compact);
    while (json.size() % 8 != 0)
        json.append(' '); // the data section starts 8-byte aligned
    QByteArray out;
    out.reserve(8 + json.size() + offset);
    auto n = static_cast<uint64_t>(json.size());
    for (int i = 0; i < 8; ++i)
        out.append(static_cast<char>((n >> (8 * i)) & 0xff));
    out += json;
    for (const Entry& e : entries_)
        out += e.data;
    return out;
}

} // namespace ropescope::model
