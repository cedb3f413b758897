#pragma once
// One piece of GPU work captured once as a CUDA graph and replayed (LibTorch's at::cuda::CUDAGraph): a decoding
// step launches its ~30-60 kernels per layer as one graph, so its time is the GPU's rather than the CPU's
// dispatch. The CUDA side lives in cuda_graph.cpp alone, behind ROPESCOPE_TORCH_CUDA (a LibTorch with CUDA);
// without it, or with ROPESCOPE_CUDA_GRAPHS=0 (for debugging), available() is false and nothing is captured.
#include <c10/core/Device.h>

#include <functional>
#include <memory>
#include <string>

namespace ropescope::model {

class CudaGraph {
public:
    // Whether work on `device` can be captured: a CUDA device, this build's LibTorch has CUDA, and
    // ROPESCOPE_CUDA_GRAPHS is not 0.
    static bool available(const c10::Device& device);

    CudaGraph();
    ~CudaGraph();
    CudaGraph(const CudaGraph&) = delete;
    CudaGraph& operator=(const CudaGraph&) = delete;

    // Runs `work` once on a side stream (its real run, which also initialises what a capture may not, such as
    // cuBLAS's workspace for that stream), then captures it without running it. Returns false, with the reason
    // in `why`, when the capture failed (an operation that reads back to the host); the work's real run stands.
    bool runAndCapture(const std::function<void()>& work, std::string& why);
    // Launches the captured work on the current stream, reading and writing the tensors it captured.
    void replay();
    bool captured() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace ropescope::model
