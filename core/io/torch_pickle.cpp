#include "core/io/torch_pickle.h"

#include <cstdlib>
#include <cstring>
#include <map>

namespace ropescope::io::pickle {
namespace {

// A dict of a few hundred tensors pickles to a few hundred values; these leave room for thousands and keep a
// hostile pickle to some tens of megabytes.
constexpr size_t kMaxValues = size_t(1) << 17, kMaxStack = size_t(1) << 16, kMaxMarks = 4096, kMaxMemo = size_t(1) << 17;
constexpr size_t kMaxText = 4096; // a global's module or name
constexpr size_t kMaxStorages = 65536, kMaxTensors = 65536;
constexpr int kMaxDimensions = 16;             // a tensor's
constexpr int64_t kMaxSize = int64_t(1) << 40; // one dimension, one stride, an offset, a storage's element count

const std::map<std::string, std::string> kStorageTypes{
    {"LongStorage", "i8"}, {"IntStorage", "i4"},  {"ShortStorage", "i2"},  {"CharStorage", "i1"},
    {"ByteStorage", "u1"}, {"BoolStorage", "b1"}, {"DoubleStorage", "f8"}, {"FloatStorage", "f4"},
};

std::string hex(uint8_t op)
{
    static const char* digits = "0123456789abcdef";
    return std::string("0x") + digits[op >> 4] + digits[op & 15];
}

const char* kindName(Kind k)
{
    switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int: return "a whole number";
    case Kind::BigInt: return "a large whole number";
    case Kind::Float: return "a float";
    case Kind::String: return "a string";
    case Kind::Tuple: return "a tuple";
    case Kind::List: return "a list";
    case Kind::Dict: return "a dict";
    case Kind::Global: return "a global";
    case Kind::Storage: return "a storage";
    case Kind::Tensor: return "a tensor";
    }
    return "?";
}

} // namespace

int elementSize(const std::string& dtype)
{
    return dtype.empty() ? 0 : std::atoi(dtype.c_str() + 1);
}

int32_t Machine::add(Value v)
{
    if (pool_.size() >= kMaxValues)
        throw IoError("the pickle builds more than " + std::to_string(kMaxValues) + " values");
    pool_.push_back(std::move(v));
    return static_cast<int32_t>(pool_.size() - 1);
}

int32_t Machine::pop(const char* op)
{
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() <= floor)
        throw IoError(std::string("the pickle's ") + op + " at byte " + std::to_string(at_) + " finds no value on its stack");
    const int32_t v = stack_.back();
    stack_.pop_back();
    return v;
}

std::vector<int32_t> Machine::popToMark(const char* op)
{
    if (marks_.empty())
        throw IoError(std::string("the pickle's ") + op + " at byte " + std::to_string(at_) + " has no MARK before it");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<int32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
}

void Machine::memoize(uint32_t key)
{
    if (stack_.empty() || (!marks_.empty() && stack_.size() <= marks_.back()))
        throw IoError("the pickle memoizes at byte " + std::to_string(at_) + " with nothing on its stack");
    if (memo_.size() >= kMaxMemo && memo_.find(key) == memo_.end())
        throw IoError("the pickle's memo grows past " + std::to_string(kMaxMemo) + " entries");
    memo_[key] = stack_.back();
}

int32_t Machine::callGlobal(const std::string& module, const std::string& name)
{
    Value g;
    g.kind = Kind::Global;
    if (module == "torch._utils" && name == "_rebuild_tensor_v2")
        g.i = static_cast<int64_t>(Callable::RebuildTensor);
    else if (module == "collections" && name == "OrderedDict")
        g.i = static_cast<int64_t>(Callable::OrderedDict);
    else if (module == "torch.jit._pickle" && name == "restore_type_tag") // LibTorch's pickle_save tags its dicts
        g.i = static_cast<int64_t>(Callable::RestoreTypeTag);
    else if (module == "torch" && kStorageTypes.count(name)) {
        g.i = static_cast<int64_t>(Callable::StorageType);
        g.s = kStorageTypes.at(name);
    } else if (module == "torch" && name.size() > 7 && name.compare(name.size() - 7, 7, "Storage") == 0)
        throw IoError("a tensor is stored as torch." + name +
                      ", an element type a dump is not read in (whole numbers, bool, float32 or float64 are)");
    else
        throw IoError("the pickle names " + module + "." + name +
                      ", which a dict of tensors does not need (only tensors, dicts, lists, tuples, numbers and strings "
                      "are read: torch.save a plain dict of tensors)");
    return add(std::move(g));
}

int32_t Machine::persistentLoad(int32_t pid)
{
    const Value& id = value(pid);
    const auto item = [&](size_t k) -> const Value& { return value(id.items[k]); };
    if (id.kind != Kind::Tuple || (id.items.size() != 5 && id.items.size() != 6) || item(0).kind != Kind::String || item(0).s != "storage")
        throw IoError("a persistent id of the pickle is not torch.save's ('storage', type, key, location, size)");
    const Value &type = item(1), &key = item(2), &numel = item(4);
    if (type.kind != Kind::Global || type.i != static_cast<int64_t>(Callable::StorageType))
        throw IoError("a storage's type in the pickle is " + std::string(kindName(type.kind)) + ", not a torch.*Storage");
    if (key.kind != Kind::String || item(3).kind != Kind::String || numel.kind != Kind::Int)
        throw IoError("a storage's key, location or size in the pickle has the wrong type");
    if (numel.i < 0 || numel.i > kMaxSize)
        throw IoError("storage '" + key.s + "' declares " + std::to_string(numel.i) + " elements");
    if (id.items.size() == 6 && item(5).kind != Kind::None)
        throw IoError("storage '" + key.s + "' is a view of another storage (legacy view metadata), which is not read");
    size_t index = 0;
    const auto known = storageByKey_.find(key.s);
    if (known != storageByKey_.end()) {
        index = known->second;
        if (storages[index].dtype != type.s || storages[index].numel != numel.i)
            throw IoError("storage '" + key.s + "' is named twice with different types or sizes");
    } else {
        if (storages.size() >= kMaxStorages)
            throw IoError("the pickle names more than " + std::to_string(kMaxStorages) + " storages");
        index = storages.size();
        storages.push_back({key.s, type.s, numel.i});
        storageByKey_[key.s] = index;
    }
    Value s;
    s.kind = Kind::Storage;
    s.i = static_cast<int64_t>(index);
    return add(std::move(s));
}

// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata]): the
// view is checked against the storage's declared size here; the storage's bytes against that size later.
int32_t Machine::rebuildTensor(const Value& args)
{
    if (args.items.size() != 6 && args.items.size() != 7)
        throw IoError("a tensor in the pickle is rebuilt from " + std::to_string(args.items.size()) + " arguments, not 6 or 7");
    const Value &storage = value(args.items[0]), &offset = value(args.items[1]), &size = value(args.items[2]),
                &stride = value(args.items[3]);
    if (storage.kind != Kind::Storage || offset.kind != Kind::Int)
        throw IoError("a tensor in the pickle has no storage or no whole-number offset");
    if ((size.kind != Kind::Tuple && size.kind != Kind::List) || (stride.kind != Kind::Tuple && stride.kind != Kind::List) ||
        size.items.size() != stride.items.size())
        throw IoError("a tensor in the pickle has sizes and strides that are not two tuples of one length");
    if (size.items.size() > kMaxDimensions)
        throw IoError("a tensor in the pickle has more than " + std::to_string(kMaxDimensions) + " dimensions");
    TensorRef t;
    t.storage = static_cast<size_t>(storage.i);
    const StorageRef& s = storages[t.storage];
    t.offset = offset.i;
    if (t.offset < 0 || t.offset > kMaxSize)
        throw IoError("a tensor on storage '" + s.key + "' has offset " + std::to_string(t.offset));
    int64_t numel = 1, last = t.offset; // the last element the view reaches
    for (size_t d = 0; d < size.items.size(); ++d) {
        const Value &n = value(size.items[d]), &step = value(stride.items[d]);
        if (n.kind != Kind::Int || step.kind != Kind::Int)
            throw IoError("a tensor on storage '" + s.key + "' has a size or stride that is not a whole number");
        if (n.i < 0 || n.i > kMaxSize || step.i < 0 || step.i > kMaxSize)
            throw IoError("a tensor on storage '" + s.key + "' has size " + std::to_string(n.i) + " and stride " + std::to_string(step.i) +
                          " in dimension " + std::to_string(d));
        t.shape.push_back(n.i);
        t.stride.push_back(step.i);
        if (numel != 0 && n.i != 0 && numel > kMaxSize / n.i)
            throw IoError("a tensor on storage '" + s.key + "' has more than 2^40 elements");
        numel *= n.i;
    }
    if (numel > 0) {
        for (size_t d = 0; d < t.shape.size(); ++d) { // each term is at most 2^80 only without this check
            int64_t reach = 0;
            if (__builtin_mul_overflow(t.shape[d] - 1, t.stride[d], &reach) || __builtin_add_overflow(last, reach, &last))
                throw IoError("a tensor on storage '" + s.key + "' reaches past any storage");
        }
        if (last >= s.numel)
            throw IoError("a tensor on storage '" + s.key + "' reaches element " + std::to_string(last) + " (offset " +
                          std::to_string(t.offset) + "), but the storage holds " + std::to_string(s.numel));
    }
    if (tensors.size() >= kMaxTensors)
        throw IoError("the pickle holds more than " + std::to_string(kMaxTensors) + " tensors");
    tensors.push_back(std::move(t));
    Value v;
    v.kind = Kind::Tensor;
    v.i = static_cast<int64_t>(tensors.size() - 1);
    return add(std::move(v));
}

int32_t Machine::reduce(int32_t callable, int32_t argsIndex)
{
    const Value& f = value(callable);
    const Value& args = value(argsIndex);
    if (f.kind != Kind::Global)
        throw IoError("the pickle's REDUCE at byte " + std::to_string(at_) + " calls " + kindName(f.kind));
    if (args.kind != Kind::Tuple)
        throw IoError("the pickle's REDUCE at byte " + std::to_string(at_) + " has " + kindName(args.kind) + " for arguments");
    switch (static_cast<Callable>(f.i)) {
    case Callable::RebuildTensor: return rebuildTensor(args);
    case Callable::OrderedDict:
        if (!args.items.empty())
            throw IoError("an OrderedDict in the pickle is built from arguments");
        return add(Value{Kind::Dict, 0, 0, {}, {}});
    case Callable::RestoreTypeTag:
        if (args.items.size() != 2)
            throw IoError("restore_type_tag in the pickle takes 2 arguments");
        return args.items[0];
    case Callable::StorageType: break;
    }
    throw IoError("the pickle calls a storage type, which torch.save never does");
}

// The bytes of one pickle, read forward from `at` and never past `end`; `opStart` is the current opcode's byte,
// which messages name.
struct Cursor {
    const QByteArray& bytes;
    qsizetype& at;
    qsizetype end;
    const qsizetype& opStart;

    void need(qsizetype n) const
    {
        if (n < 0 || at + n > end)
            throw IoError("the pickle ends inside its opcode at byte " + std::to_string(opStart));
    }
    uint8_t byte(qsizetype k) const { return static_cast<uint8_t>(bytes[at + k]); }
    uint64_t u(int n) // little-endian unsigned of n bytes
    {
        need(n);
        uint64_t v = 0;
        for (int k = 0; k < n; ++k)
            v |= static_cast<uint64_t>(byte(k)) << (8 * k);
        at += n;
        return v;
    }
    std::string text(uint64_t n)
    {
        need(static_cast<qsizetype>(std::min<uint64_t>(n, uint64_t(1) << 40)));
        std::string s(bytes.constData() + at, static_cast<size_t>(n));
        at += static_cast<qsizetype>(n);
        return s;
    }
    std::string line() // GLOBAL's module and name, each ended by a newline
    {
        std::string s;
        while (true) {
            need(1);
            const char c = bytes[at++];
            if (c == '\n')
                return s;
            if (s.size() >= kMaxText)
                throw IoError("a global's name in the pickle is too long");
            s += c;
        }
    }
    int64_t long1() // LONG1's value when it fits 8 bytes: little-endian two's complement
    {
        const auto n = static_cast<int>(u(1));
        need(n);
        uint64_t v = n > 0 && (byte(n - 1) & 0x80) ? ~uint64_t(0) : 0;
        for (int k = 0; k < n; ++k) {
            v &= ~(uint64_t(0xff) << (8 * k));
            v |= static_cast<uint64_t>(byte(k)) << (8 * k);
        }
        at += n;
        return static_cast<int64_t>(v);
    }
    double binfloat() // BINFLOAT: big-endian double
    {
        need(8);
        uint64_t b = 0;
        for (int k = 0; k < 8; ++k)
            b = (b << 8) | byte(k);
        at += 8;
        double f = 0;
        std::memcpy(&f, &b, sizeof b);
        return f;
    }
};

void Machine::push(int32_t v)
{
    if (stack_.size() >= kMaxStack)
        throw IoError("the pickle's stack grows past " + std::to_string(kMaxStack) + " values");
    stack_.push_back(v);
}

void Machine::pushValue(Kind k, int64_t i, std::string s, std::vector<int32_t> items)
{
    Value v;
    v.kind = k;
    v.i = i;
    v.s = std::move(s);
    v.items = std::move(items);
    push(add(std::move(v)));
}

// The list or dict an APPEND/SETITEM adds to (the stack's top, above the innermost MARK) or an APPENDS/SETITEMS does
// (just below the innermost MARK, above the one before it).
Value& Machine::target(Kind k, const char* op, bool marked)
{
    const size_t below = marked ? (marks_.empty() ? 0 : marks_.back()) : stack_.size();
    const size_t floor = marked ? (marks_.size() > 1 ? marks_[marks_.size() - 2] : 0) : (marks_.empty() ? 0 : marks_.back());
    if (below <= floor)
        throw IoError(std::string("the pickle's ") + op + " at byte " + std::to_string(at_) + " has nothing to add to");
    Value& v = pool_[static_cast<size_t>(stack_[below - 1])];
    if (v.kind != k)
        throw IoError(std::string("the pickle's ") + op + " at byte " + std::to_string(at_) + " adds to " + kindName(v.kind));
    return v;
}

// MARK and the opcodes that build tuples, lists and dicts. False for any other opcode.
bool Machine::containerOp(uint8_t op)
{
    switch (op) {
    case '(':
        if (marks_.size() >= kMaxMarks)
            throw IoError("the pickle nests more than " + std::to_string(kMaxMarks) + " MARKs");
        marks_.push_back(stack_.size());
        return true;
    case '}': pushValue(Kind::Dict); return true;
    case ']': pushValue(Kind::List); return true;
    case ')': pushValue(Kind::Tuple); return true;
    case 't': pushValue(Kind::Tuple, 0, {}, popToMark("TUPLE")); return true;
    case 'l': pushValue(Kind::List, 0, {}, popToMark("LIST")); return true;
    case 0x85:
    case 0x86:
    case 0x87: { // TUPLE1, TUPLE2, TUPLE3
        std::vector<int32_t> items(static_cast<size_t>(op - 0x84));
        for (size_t k = items.size(); k-- > 0;)
            items[k] = pop("TUPLEn");
        pushValue(Kind::Tuple, 0, {}, std::move(items));
        return true;
    }
    case 'a': { // APPEND
        const int32_t v = pop("APPEND");
        target(Kind::List, "APPEND", false).items.push_back(v);
        return true;
    }
    case 'e': { // APPENDS
        Value& list = target(Kind::List, "APPENDS", true);
        for (int32_t v : popToMark("APPENDS"))
            list.items.push_back(v);
        return true;
    }
    case 's': { // SETITEM
        const int32_t v = pop("SETITEM"), k = pop("SETITEM");
        Value& dict = target(Kind::Dict, "SETITEM", false);
        dict.items.push_back(k);
        dict.items.push_back(v);
        return true;
    }
    case 'u': { // SETITEMS
        Value& dict = target(Kind::Dict, "SETITEMS", true);
        const std::vector<int32_t> items = popToMark("SETITEMS");
        if (items.size() % 2)
            throw IoError("the pickle's SETITEMS at byte " + std::to_string(at_) + " has a key without a value");
        dict.items.insert(dict.items.end(), items.begin(), items.end());
        return true;
    }
    default: return false;
    }
}

// The opcodes of plain values: None, bools, ints, floats, strings and bytes. False for any other opcode.
bool Machine::valueOp(uint8_t op, Cursor& c)
{
    switch (op) {
    case 'N': pushValue(Kind::None); return true;
    case 0x88: pushValue(Kind::Bool, 1); return true;
    case 0x89: pushValue(Kind::Bool, 0); return true;
    case 'K': pushValue(Kind::Int, static_cast<int64_t>(c.u(1))); return true;
    case 'M': pushValue(Kind::Int, static_cast<int64_t>(c.u(2))); return true;
    case 'J': pushValue(Kind::Int, static_cast<int32_t>(static_cast<uint32_t>(c.u(4)))); return true;
    case 0x8a: // LONG1: up to 8 bytes an Int, longer a BigInt kept as its bytes
        c.need(1);
        if (c.byte(0) <= 8)
            pushValue(Kind::Int, c.long1());
        else
            pushValue(Kind::BigInt, 0, c.text(c.u(1)));
        return true;
    case 'G': {
        Value v;
        v.kind = Kind::Float;
        v.f = c.binfloat();
        push(add(std::move(v)));
        return true;
    }
    case 'X': pushValue(Kind::String, 0, c.text(c.u(4))); return true;  // BINUNICODE
    case 0x8c: pushValue(Kind::String, 0, c.text(c.u(1))); return true; // SHORT_BINUNICODE
    case 0x8d: pushValue(Kind::String, 0, c.text(c.u(8))); return true; // BINUNICODE8
    case 'U': pushValue(Kind::String, 0, c.text(c.u(1))); return true;  // SHORT_BINSTRING
    case 'T': pushValue(Kind::String, 0, c.text(c.u(4))); return true;  // BINSTRING
    case 'C': pushValue(Kind::String, 0, c.text(c.u(1))); return true;  // SHORT_BINBYTES
    case 'B': pushValue(Kind::String, 0, c.text(c.u(4))); return true;  // BINBYTES
    default: return false;
    }
}

// Globals, the memo, persistent ids and REDUCE. False for any other opcode.
bool Machine::referenceOp(uint8_t op, Cursor& c)
{
    switch (op) {
    case 'c': { // GLOBAL
        const std::string module = c.line();
        push(callGlobal(module, c.line()));
        return true;
    }
    case 0x93: { // STACK_GLOBAL
        const Value &name = value(pop("STACK_GLOBAL")), &module = value(pop("STACK_GLOBAL"));
        if (name.kind != Kind::String || module.kind != Kind::String)
            throw IoError("the pickle's STACK_GLOBAL at byte " + std::to_string(at_) + " names no global");
        push(callGlobal(module.s, name.s));
        return true;
    }
    case 'q': memoize(static_cast<uint32_t>(c.u(1))); return true;        // BINPUT
    case 'r': memoize(static_cast<uint32_t>(c.u(4))); return true;        // LONG_BINPUT
    case 0x94: memoize(static_cast<uint32_t>(memo_.size())); return true; // MEMOIZE
    case 'h':
    case 'j': { // BINGET, LONG_BINGET
        const auto key = static_cast<uint32_t>(c.u(op == 'h' ? 1 : 4));
        const auto it = memo_.find(key);
        if (it == memo_.end())
            throw IoError("the pickle gets memo " + std::to_string(key) + " at byte " + std::to_string(at_) + ", which was never put");
        push(it->second);
        return true;
    }
    case 'Q': push(persistentLoad(pop("BINPERSID"))); return true;
    case 'R': { // REDUCE
        const int32_t args = pop("REDUCE"), f = pop("REDUCE");
        push(reduce(f, args));
        return true;
    }
    default: return false;
    }
}

[[noreturn]] void Machine::unknownOp(uint8_t op) const
{
    static const std::map<uint8_t, const char*> names{
        {'b', "BUILD"},      {0x81, "NEWOBJ"},   {0x92, "NEWOBJ_EX"}, {'i', "INST"},        {'o', "OBJ"},         {'P', "PERSID"},
        {'0', "POP"},        {'1', "POP_MARK"},  {'2', "DUP"},        {'p', "PUT"},         {'g', "GET"},         {'I', "INT"},
        {'L', "LONG"},       {'F', "FLOAT"},     {'S', "STRING"},     {'V', "UNICODE"},     {0x82, "EXT1"},       {0x8b, "LONG4"},
        {0x8f, "EMPTY_SET"}, {0x90, "ADDITEMS"}, {0x91, "FROZENSET"}, {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"}};
    const auto name = names.find(op);
    throw IoError("the pickle uses opcode " + std::string(name != names.end() ? name->second : "") + " (" + hex(op) + ") at byte " +
                  std::to_string(at_) + ", which a dict of tensors does not need");
}

int32_t Machine::run(const QByteArray& bytes, qsizetype& at, qsizetype maxBytes)
{
    stack_.clear();
    marks_.clear();
    memo_.clear();
    Cursor c{bytes, at, std::min(bytes.size(), at + maxBytes), at_};
    while (true) {
        at_ = at;
        c.need(1);
        const auto op = static_cast<uint8_t>(bytes[at++]);
        if (op == 0x80) { // PROTO
            if (const uint64_t p = c.u(1); p < 2 || p > 5)
                throw IoError("the pickle is of protocol " + std::to_string(p) + " (2 to 5 are read)");
        } else if (op == 0x95) { // FRAME: a hint of the next frame's length
            c.u(8);
        } else if (op == '.') { // STOP
            const int32_t result = pop("STOP");
            if (!stack_.empty() || !marks_.empty())
                throw IoError("the pickle stops with values or marks left on its stack");
            return result;
        } else if (!containerOp(op) && !valueOp(op, c) && !referenceOp(op, c)) {
            unknownOp(op);
        }
    }
}

} // namespace ropescope::io::pickle
