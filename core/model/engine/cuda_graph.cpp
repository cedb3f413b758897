#include "core/model/engine/cuda_graph.h"

#include <cstdlib>
#include <cstring>
#include <string>

#ifdef ROPESCOPE_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>
#endif

namespace ropescope::model {

#ifdef ROPESCOPE_TORCH_CUDA

namespace {

bool graphsWanted()
{
    const char* env = std::getenv("ROPESCOPE_CUDA_GRAPHS");
    return !(env && std::strcmp(env, "0") == 0);
}

} // namespace

struct CudaGraph::Impl {
    at::cuda::CUDAGraph graph;
    bool captured = false;
};

bool CudaGraph::available(const c10::Device& device)
{
    return device.is_cuda() && graphsWanted();
}

CudaGraph::CudaGraph() : impl_(std::make_unique<Impl>()) { }
CudaGraph::~CudaGraph() = default;

bool CudaGraph::runAndCapture(const std::function<void()>& work, std::string& why)
{
    // The side stream starts after the work already queued on the current one (the prefill, the inputs' copies).
    c10::cuda::getCurrentCUDAStream().synchronize();
    const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
    {
        const c10::cuda::CUDAStreamGuard onSide(side);
        work();
        side.synchronize();
        try {
            impl_->graph.capture_begin();
            try {
                work();
            } catch (...) {
                try { // end the capture so the stream is usable again; it fails, the capture being invalid
                    impl_->graph.capture_end();
                } catch (const std::exception&) { }
                throw;
            }
            impl_->graph.capture_end();
            impl_->captured = true;
        } catch (const c10::Error& e) {
            why = e.what_without_backtrace();
        } catch (const std::exception& e) {
            why = e.what();
        }
        if (!impl_->captured) {
            why = why.substr(0, why.find('\n'));
            try {
                impl_->graph.reset();
            } catch (const std::exception&) { }
        }
        side.synchronize();
    }
    return impl_->captured;
}

void CudaGraph::replay()
{
    impl_->graph.replay();
}

#else

struct CudaGraph::Impl {
    bool captured = false;
};

bool CudaGraph::available(const c10::Device&)
{
    return false;
}

CudaGraph::CudaGraph() : impl_(std::make_unique<Impl>()) { }
CudaGraph::~CudaGraph() = default;

bool CudaGraph::runAndCapture(const std::function<void()>& work, std::string& why)
{
    work();
    why = "this LibTorch has no CUDA";
    return false;
}

void CudaGraph::replay() { }

#endif

bool CudaGraph::captured() const
{
    return impl_->captured;
}

} // namespace ropescope::model
