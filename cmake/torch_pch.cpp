// The one source of ropescope_torch_pch (cmake/TorchPch.cmake): the target exists to build LibTorch's
// precompiled header, which the computing targets reuse.
