#pragma once
// The CUDA driver header: nothing the syntax check reaches needs its declarations.
#include "cuda_runtime_api.h"
