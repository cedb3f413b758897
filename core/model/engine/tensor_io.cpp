#include "core/model/engine/tensor_io.h"

#include <torch/types.h>

namespace ropescope::model {

torch::Tensor toTorch(const SafeTensors& file, const TensorInfo& info)
{
    torch::Dtype dtype;
    switch (info.dtype) {
    case DType::F64: dtype = torch::kFloat64; break;
    case DType::F32: dtype = torch::kFloat32; break;
    case DType::F16: dtype = torch::kFloat16; break;
    case DType::BF16: dtype = torch::kBFloat16; break;
    case DType::I64: dtype = torch::kInt64; break;
    case DType::I32: dtype = torch::kInt32; break;
    case DType::I16: dtype = torch::kInt16; break;
    case DType::I8: dtype = torch::kInt8; break;
    case DType::U8: dtype = torch::kUInt8; break;
    case DType::Bool: dtype = torch::kBool; break;
    default: throw ModelError(file.path().toStdString() + ": tensor '" + info.name + "': unsupported dtype");
    }
    // from_blob does not copy; the clone/convert below does, so the tensor outlives the mapping.
    auto view = torch::from_blob(const_cast<uint8_t*>(file.data(info)), info.shape, torch::TensorOptions().dtype(dtype));
    if (torch::isFloatingType(dtype))
        return view.to(torch::kFloat32, /*non_blocking=*/false, /*copy=*/true);
    if (dtype == torch::kBool)
        return view.clone();
    return view.to(torch::kInt64, false, true);
}

torch::Tensor toTorch(const SafeTensors& file, const std::string& name)
{
    return toTorch(file, file.get(name));
}

void addTensor(SafeTensorsWriter& writer, const std::string& name, const torch::Tensor& tensor)
{
    torch::Tensor t = tensor.detach().to(torch::kCPU).contiguous();
    DType dtype = DType::F32;
    if (t.scalar_type() == torch::kInt64)
        dtype = DType::I64;
    else if (t.scalar_type() == torch::kBool)
        dtype = DType::Bool;
    else if (t.scalar_type() != torch::kFloat32)
        t = t.to(torch::kFloat32).contiguous();
    const std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
    writer.add(name, dtype, shape, t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
}

} // namespace ropescope::model

namespace ropescope::model {

void addTensorAs(SafeTensorsWriter& writer, const std::string& name, const torch::Tensor& tensor, DType dtype)
{
    const torch::Dtype torchType = dtype == DType::F16 ? torch::kFloat16 : dtype == DType::BF16 ? torch::kBFloat16 : torch::kFloat32;
    const torch::Tensor t = tensor.detach().to(torch::kCPU).to(torchType).contiguous();
    const std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
    writer.add(name, dtype, shape, t.data_ptr(), static_cast<size_t>(t.numel()) * t.element_size());
}

} // namespace ropescope::model
