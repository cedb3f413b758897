#pragma once
#include <QByteArray>
#include <QString>

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ropescope::model {

// A checkpoint or tensor file that cannot be used: the message names the file and the tensor.
class ModelError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// An outside file that is not what it claims (config.json, weights, tokenizer, preprocessing, question set, a
// bias state): bad input, exit code 2 on the command line like a bad table or scheme file (docs/CLI.md).
class BadInputFile : public ModelError {
public:
    using ModelError::ModelError;
};

// A run's inputs that do not fit together or the model (ids out of the vocabulary, grids that do not match the
// ids, missing or non-finite pixels, token types): bad input like a malformed file. `forward` names its --inputs
// file in front of the message.
class BadRequest : public BadInputFile {
public:
    using BadInputFile::BadInputFile;
};

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };
const char* dtypeName(DType d);

struct TensorInfo {
    std::string name;
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    uint64_t begin = 0; // byte offsets into the data section
    uint64_t end = 0;
};

// A safetensors file (8-byte little-endian header length, JSON header, raw little-endian data),
// memory-mapped. The header is validated against the file before any tensor is touched: known dtypes,
// shapes whose byte size matches the offsets, offsets inside the data section, no overlapping tensors,
// a bounded header size. A hostile file yields a ModelError, never an out-of-bounds read.
class SafeTensors {
public:
    static SafeTensors open(const QString& path);
    // Parses bytes held in memory (tests and the fuzzer); `name` appears in messages.
    static SafeTensors fromBytes(QByteArray bytes, const QString& name = "<memory>");

    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    const TensorInfo* find(const std::string& name) const;
    // Throws ModelError naming the file and the tensor if absent.
    const TensorInfo& get(const std::string& name) const;
    const uint8_t* data(const TensorInfo& t) const { return data_ + t.begin; }
    const std::map<std::string, std::string>& metadata() const { return metadata_; }
    const QString& path() const { return path_; }

private:
    void parse(const uint8_t* bytes, uint64_t size);

    QString path_;
    std::shared_ptr<void> storage_; // the mapping or the buffer; keeps data_ alive
    const uint8_t* data_ = nullptr;
    uint64_t dataSize_ = 0;
    std::vector<TensorInfo> tensors_;
    std::map<std::string, size_t> index_;
    std::map<std::string, std::string> metadata_;
};

// Builds a safetensors file: tensors are appended in order; bytes() gives the whole file.
class SafeTensorsWriter {
public:
    void add(const std::string& name, DType dtype, const std::vector<int64_t>& shape, const void* data, size_t bytes);
    void setMetadata(const std::string& key, const std::string& value) { metadata_[key] = value; }
    QByteArray bytes() const;

private:
    struct Entry {
        std::string name;
        DType dtype;
        std::vector<int64_t> shape;
        QByteArray data;
    };
    std::vector<Entry> entries_;
    std::map<std::string, std::string> metadata_;
};

} // namespace ropescope::model
