#!/usr/bin/env bash
# How much of LibTorch a file parses (docs/ARCHITECTURE.md, docs/CI.md):
# - No project header includes LibTorch's API: headers name tensors through <ATen/core/Tensor.h>, and a source
#   that computes includes the API itself. One header that pulls it in costs every source that includes it,
#   directly or not. tests/support/parity.h is the one exception: only model suites, which compute, include it.
# - No file includes the umbrella headers (<torch/torch.h>, <torch/all.h>, <torch/nn.h>,
#   <torch/nn/functional.h>): a source includes <torch/types.h> and the few API headers it uses
#   (<torch/nn/functional/linear.h>, <torch/csrc/autograd/autograd.h>, ...). Measured with GCC 12 on a 2-core
#   machine: <torch/torch.h> takes 27 s to parse, <torch/types.h> 14 s, and 42 sources compute.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git >/dev/null && [ -e .git ] || { echo "check_torch_includes: needs a git checkout (it checks the tracked files)" >&2; exit 2; }
mapfile -t api < <(git grep -l -E '^#include <torch/(torch|all|types|nn)\.h>' -- '*.h' ':!tests/support/parity.h' || true)
for f in "${api[@]}"; do echo "check_torch_includes: $f includes LibTorch's API (use <ATen/core/Tensor.h> and include the API in the sources)"; done
mapfile -t umbrella < <(git grep -l -E '^#include <torch/(torch|all|nn|nn/functional)\.h>' -- '*.h' '*.cpp' || true)
for f in "${umbrella[@]}"; do echo "check_torch_includes: $f includes a LibTorch umbrella header (include <torch/types.h> and the API headers it uses)"; done
echo "check_torch_includes: ${#api[@]} headers include LibTorch's API, ${#umbrella[@]} files an umbrella header"
[ ${#api[@]} -eq 0 ] && [ ${#umbrella[@]} -eq 0 ]
