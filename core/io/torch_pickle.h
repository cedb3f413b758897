#pragma once
// The pickle machine behind torch_save.h: runs one pickle (protocols 2 to 5) with a bounded stack, memo and
// value count and without recursion (values live in one pool and name each other by index, so a tuple nested
// a million deep is a million small entries, not a million stack frames). It knows only the opcodes and
// globals a dict of tensors is pickled with; anything else is refused naming the opcode or the global.
// torch.*Storage persistent ids become storage references and torch._utils._rebuild_tensor_v2 becomes a tensor
// whose offset, sizes and strides are checked against its storage's declared element count on the spot.
#include "core/io/atomic_file.h"

#include <QByteArray>

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace ropescope::io::pickle {

enum class Kind : uint8_t { None, Bool, Int, BigInt, Float, String, Tuple, List, Dict, Global, Storage, Tensor };
enum class Callable : uint8_t { RebuildTensor, OrderedDict, RestoreTypeTag, StorageType };

struct Value {
    Kind kind = Kind::None;
    int64_t i = 0;              // Int and Bool; the index into storages or tensors; a Global's Callable
    double f = 0;               // Float
    std::string s;              // String; BigInt's little-endian bytes; a StorageType global's dtype ("i8", ...)
    std::vector<int32_t> items; // Tuple and List; Dict: key, value, key, value, ... (a later key wins)
};

struct StorageRef {
    std::string key, dtype; // the record's key; "i8", "f4", ...
    int64_t numel = 0;      // as the persistent id declares it
};

struct TensorRef {
    size_t storage = 0;
    int64_t offset = 0;
    std::vector<int64_t> shape, stride;
};

int elementSize(const std::string& dtype); // bytes of "i8", "f4", ...

struct Cursor; // the bytes of one pickle as run() reads them (torch_pickle.cpp)

class Machine {
public:
    // Runs the pickle starting at `at` (at most `maxBytes` of it) up to its STOP; returns its value and leaves
    // `at` just past the STOP. The memo and stack are the pickle's own; storages and tensors accumulate.
    int32_t run(const QByteArray& bytes, qsizetype& at, qsizetype maxBytes);
    const Value& value(int32_t index) const { return pool_[static_cast<size_t>(index)]; }
    // The index in `storages` of the storage named `key`; storages.size() when no persistent id named it.
    size_t storageIndex(const std::string& key) const
    {
        const auto found = storageByKey_.find(key);
        return found == storageByKey_.end() ? storages.size() : found->second;
    }

    std::vector<StorageRef> storages;
    std::vector<TensorRef> tensors;

private:
    int32_t add(Value v);
    int32_t pop(const char* op);
    std::vector<int32_t> popToMark(const char* op);
    int32_t callGlobal(const std::string& module, const std::string& name);
    int32_t persistentLoad(int32_t pid);
    int32_t reduce(int32_t callable, int32_t args);
    int32_t rebuildTensor(const Value& args);
    void memoize(uint32_t key);
    void push(int32_t v);
    void pushValue(Kind k, int64_t i = 0, std::string s = {}, std::vector<int32_t> items = {});
    Value& target(Kind k, const char* op, bool marked);
    bool containerOp(uint8_t op);
    bool valueOp(uint8_t op, Cursor& c);
    bool referenceOp(uint8_t op, Cursor& c);
    [[noreturn]] void unknownOp(uint8_t op) const;

    std::vector<Value> pool_;
    std::vector<int32_t> stack_;
    std::vector<size_t> marks_;
    std::unordered_map<uint32_t, int32_t> memo_;
    std::map<std::string, size_t> storageByKey_;
    qsizetype at_ = 0; // the current opcode's byte, for messages
};

} // namespace ropescope::io::pickle
