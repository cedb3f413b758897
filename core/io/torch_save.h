#pragma once
// torch.save of a dict of tensors, read without LibTorch: its unpickler (torch::pickle_load) trusts the sizes
// written in the file, so a crafted file crashed it or made it read memory it did not own. Both forms are read:
// the zip archive (PyTorch >= 1.6: PREFIX/data.pkl and PREFIX/data/KEY per storage) and the legacy stream (five
// pickles, then each storage's element count and bytes). The pickles run on a small machine with a bounded
// stack, memo and value count, no recursion, and only what such a dict needs: dicts, OrderedDict, lists, tuples,
// whole numbers, floats, strings, bools, None, torch._utils._rebuild_tensor_v2 and torch.*Storage persistent ids.
// Every storage's length is checked against its record's real bytes, and every tensor's offset, sizes and
// strides against its storage, before a byte of it is read.
#include <QByteArray>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ropescope::io {

// One tensor of the dict: a strided view into its storage's bytes, checked to lie inside them.
struct SavedTensor {
    std::string dtype;                  // as .npy's descr without the byte order: "i8", "i4", "i2", "i1", "u1", "b1", "f8", "f4"
    std::vector<int64_t> shape, stride; // in elements
    int64_t offset = 0;                 // in elements
    QByteArray storage;                 // little-endian; a view into the file's bytes where the file stores it
    int64_t numel() const;
};

// The tensors of the dict `file` holds (torch.save's bytes), by key, for the keys `wanted` accepts; other entries
// (tensors of other keys, numbers, lists) are skipped unread. The wanted tensors together may hold at most
// `maxElements` elements, checked on their declared sizes. Views are into `file`: keep it while they are used.
// Throws IoError (without the file's name) saying what is wrong.
std::map<std::string, SavedTensor> readTorchSave(const QByteArray& file, const std::function<bool(const std::string&)>& wanted,
                                                 int64_t maxElements);

} // namespace ropescope::io
