#include "core/io/torch_save.h"

#include "core/io/torch_pickle.h"
#include "core/io/zip_archive.h"

#include <cstring>

namespace ropescope::io {
namespace {

constexpr qsizetype kMaxPickleBytes = qsizetype(16) << 20; // a dict of tensors pickles to ~100 bytes a tensor
// torch.save's legacy form starts with this pickle: LONG1 of the magic number 0x1950a86a20f9469cfc6c.
const QByteArray kLegacyMagic("\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.", 15);
constexpr int64_t kLegacyProtocol = 1001;

using pickle::Kind;

// The tensors of the top-level dict, those wanted, with their storages' bytes from `storageBytes(index)`,
// which is asked only for the storages of wanted tensors (their elements counted first).
std::map<std::string, SavedTensor> wantedTensors(const pickle::Machine& m, int32_t top,
                                                 const std::function<bool(const std::string&)>& wanted, int64_t maxElements,
                                                 const std::function<QByteArray(size_t)>& storageBytes)
{
    const pickle::Value& dict = m.value(top);
    if (dict.kind != Kind::Dict)
        throw IoError("the file holds no dict: torch.save of a dict of tensors ({\"input_ids\": ..., \"position_ids\": ...}) is read");
    std::map<std::string, SavedTensor> out;
    int64_t total = 0;
    for (size_t k = 0; k + 1 < dict.items.size(); k += 2) {
        const pickle::Value &key = m.value(dict.items[k]), &value = m.value(dict.items[k + 1]);
        if (key.kind != Kind::String || value.kind != Kind::Tensor || !wanted(key.s))
            continue; // other entries of a training loop's dict (numbers, lists, other tensors) are not read
        const pickle::TensorRef& t = m.tensors[static_cast<size_t>(value.i)];
        SavedTensor s;
        s.dtype = m.storages[t.storage].dtype;
        s.shape = t.shape;
        s.stride = t.stride;
        s.offset = t.offset;
        const int64_t n = s.numel();
        if (n > maxElements - total) // declared sizes, before anything is read or expanded
            throw IoError("'" + key.s + "' brings the elements read past " + std::to_string(maxElements) +
                          " (a stride-0 or huge tensor?); a dump file's tensors hold at most that many together");
        total += n;
        s.storage = storageBytes(t.storage);
        out[key.s] = std::move(s);
    }
    return out;
}

std::map<std::string, SavedTensor> readZipForm(const QByteArray& file, const std::function<bool(const std::string&)>& wanted,
                                               int64_t maxElements)
{
    const std::vector<ZipMember> members = listZipMembers(file);
    std::map<QString, const ZipMember*> byName;
    for (const ZipMember& m : members)
        byName[m.name] = &m;
    // PREFIX/data.pkl: PREFIX is the file's stem or "archive", as torch.save chose it.
    QString prefix;
    for (const ZipMember& m : members)
        if (m.name.endsWith("/data.pkl") && m.name.count('/') == 1) {
            if (!prefix.isEmpty())
                throw IoError("the archive holds two pickles (" + prefix.toStdString() + "data.pkl and " + m.name.toStdString() + ")");
            prefix = m.name.chopped(8);
        }
    if (prefix.isEmpty()) {
        for (const ZipMember& m : members)
            if (m.name.endsWith("/constants.pkl"))
                throw IoError("a TorchScript archive (torch.jit.save), not torch.save of a dict of tensors");
        throw IoError("a ZIP archive without PREFIX/data.pkl: not torch.save's (an .npz would be named .npz)");
    }
    if (const auto order = byName.find(prefix + "byteorder"); order != byName.end()) {
        const QByteArray b = zipMemberBytes(file, *order->second, 64);
        if (b != "little")
            throw IoError("the archive's byteorder is '" + b.left(16).toStdString() + "'; little-endian dumps are read");
    }
    if (const auto version = byName.find(prefix + "version"); version != byName.end()) {
        const QByteArray v = zipMemberBytes(file, *version->second, 64).trimmed();
        bool whole = false;
        v.toInt(&whole);
        if (!whole)
            throw IoError("the archive's version record is '" + v.left(16).toStdString() + "', not a number");
    }
    const ZipMember& data = *byName.at(prefix + "data.pkl");
    if (data.size > kMaxPickleBytes)
        throw IoError("data.pkl holds " + std::to_string(data.size) + " bytes; a dict of tensors pickles to far less");
    const QByteArray pickleBytes = zipMemberBytes(file, data, kMaxPickleBytes);
    pickle::Machine m;
    qsizetype at = 0;
    const int32_t top = m.run(pickleBytes, at, pickleBytes.size());
    // Each storage's record: its real length must be what the pickle declares, before any byte of it is read.
    std::vector<const ZipMember*> records;
    for (const pickle::StorageRef& s : m.storages) {
        const auto record = byName.find(prefix + "data/" + QString::fromStdString(s.key));
        if (record == byName.end())
            throw IoError("the pickle names storage '" + s.key + "', which the archive lacks (no data/" + s.key + ")");
        const int64_t bytes = s.numel * pickle::elementSize(s.dtype);
        if (static_cast<int64_t>(record->second->size) != bytes)
            throw IoError("storage '" + s.key + "' declares " + std::to_string(s.numel) + " elements (" + std::to_string(bytes) +
                          " bytes), but its record holds " + std::to_string(record->second->size) + " bytes");
        records.push_back(record->second);
    }
    // Only the storages of wanted tensors are read: a stored record (torch.save's) is a view; a deflated one is
    // inflated once, and all of them together within the bytes the wanted tensors may hold.
    std::map<size_t, QByteArray> inflated;
    int64_t inflatedBytes = 0;
    return wantedTensors(m, top, wanted, maxElements, [&](size_t index) {
        const ZipMember& record = *records[index];
        if (record.method == 0)
            return zipMemberBytes(file, record, 0);
        if (!inflated.count(index)) {
            inflatedBytes += record.size;
            if (inflatedBytes > maxElements * 8)
                throw IoError("the deflated storages of the tensors read inflate to more than " + std::to_string(maxElements * 8) +
                              " bytes");
            inflated[index] = zipMemberBytes(file, record, record.size);
        }
        return inflated[index];
    });
}

// The legacy form: pickles of the magic number, the protocol version (1001) and the system's sizes, then the
// object, then the list of its storages' keys; then each of those storages as an int64 element count and bytes.
std::map<std::string, SavedTensor> readLegacyForm(const QByteArray& file, const std::function<bool(const std::string&)>& wanted,
                                                  int64_t maxElements)
{
    pickle::Machine m;
    qsizetype at = kLegacyMagic.size();
    const pickle::Value& protocol = m.value(m.run(file, at, kMaxPickleBytes));
    if (protocol.kind != Kind::Int || protocol.i != kLegacyProtocol)
        throw IoError("torch.save's legacy form of protocol " + (protocol.kind == Kind::Int ? std::to_string(protocol.i) : "?") +
                      " (1001 is read)");
    const pickle::Value& system = m.value(m.run(file, at, kMaxPickleBytes));
    if (system.kind != Kind::Dict)
        throw IoError("torch.save's legacy form without its system information");
    for (size_t k = 0; k + 1 < system.items.size(); k += 2) {
        const pickle::Value &key = m.value(system.items[k]), &value = m.value(system.items[k + 1]);
        if (key.kind == Kind::String && key.s == "little_endian" && !(value.kind == Kind::Bool && value.i == 1))
            throw IoError("saved on a big-endian machine; little-endian dumps are read");
    }
    const int32_t top = m.run(file, at, kMaxPickleBytes);
    const pickle::Value& keys = m.value(m.run(file, at, kMaxPickleBytes));
    if (keys.kind != Kind::List)
        throw IoError("torch.save's legacy form without its list of storages");
    std::vector<QByteArray> bytes(m.storages.size());
    std::vector<bool> seen(m.storages.size(), false);
    for (int32_t k : keys.items) {
        const pickle::Value& key = m.value(k);
        // The machine's map, not a scan of every storage per key (quadratic: 10^4 storages in a few MB of file).
        const size_t index = key.kind == Kind::String ? m.storageIndex(key.s) : m.storages.size();
        if (index == m.storages.size() || seen[index])
            throw IoError("the list of storages names " + (key.kind == Kind::String ? "'" + key.s + "'" : std::string("a non-string")) +
                          ", which the object does not use or which comes twice");
        seen[index] = true;
        const pickle::StorageRef& s = m.storages[index];
        if (at + 8 > file.size())
            throw IoError("the file ends before storage '" + s.key + "'");
        int64_t numel = 0;
        std::memcpy(&numel, file.constData() + at, 8); // little-endian, as checked above
        at += 8;
        if (numel != s.numel)
            throw IoError("storage '" + s.key + "' is declared with " + std::to_string(s.numel) + " elements but written with " +
                          std::to_string(numel));
        const int64_t size = s.numel * pickle::elementSize(s.dtype);
        if (size > file.size() - at)
            throw IoError("storage '" + s.key + "' needs " + std::to_string(size) + " bytes, but the file holds " +
                          std::to_string(file.size() - at) + " more");
        bytes[index] = QByteArray::fromRawData(file.constData() + at, static_cast<qsizetype>(size));
        at += static_cast<qsizetype>(size);
    }
    for (size_t s = 0; s < m.storages.size(); ++s)
        if (!seen[s])
            throw IoError("storage '" + m.storages[s].key + "' has no data in the file");
    return wantedTensors(m, top, wanted, maxElements, [&](size_t index) { return bytes[index]; });
}

} // namespace

int64_t SavedTensor::numel() const
{
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    return n;
}

std::map<std::string, SavedTensor> readTorchSave(const QByteArray& file, const std::function<bool(const std::string&)>& wanted,
                                                 int64_t maxElements)
{
    if (file.startsWith("PK\x03\x04"))
        return readZipForm(file, wanted, maxElements);
    if (file.startsWith(kLegacyMagic))
        return readLegacyForm(file, wanted, maxElements);
    throw IoError("not a torch.save file (neither its ZIP archive nor its legacy form with the magic number)");
}

} // namespace ropescope::io
