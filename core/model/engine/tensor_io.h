#pragma once
// LibTorch side of safetensors: only model code includes this (torch headers are slow to compile).
#include "core/model/engine/safetensors.h"

#include <ATen/core/Tensor.h> // the types alone; sources that compute include <torch/types.h>

namespace ropescope::model {

// A copy of the tensor as float32 (floating dtypes) or int64 (integer dtypes) on the CPU.
at::Tensor toTorch(const SafeTensors& file, const TensorInfo& info);
at::Tensor toTorch(const SafeTensors& file, const std::string& name);

// Appends a tensor (made contiguous, on the CPU) to a writer. float32, int64 and bool are kept; others
// are converted to float32.
void addTensor(SafeTensorsWriter& writer, const std::string& name, const at::Tensor& tensor);
// Appends a floating tensor stored as `dtype` (F16, BF16 or F32).
void addTensorAs(SafeTensorsWriter& writer, const std::string& name, const at::Tensor& tensor, DType dtype);

} // namespace ropescope::model
