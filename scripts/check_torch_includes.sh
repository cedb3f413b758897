#!/usr/bin/env bash
# No project header includes <torch/torch.h> (docs/ARCHITECTURE.md): headers name tensors through
# <ATen/core/Tensor.h>, and a source that computes includes LibTorch's API itself. One header that pulls in
# torch/torch.h costs every source that includes it, directly or not, 24 s of parsing on a 2-core machine.
# tests/support/parity.h is the one exception: only model suites, which compute, include it.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v git >/dev/null && [ -e .git ] || { echo "check_torch_includes: needs a git checkout (it checks the tracked files)" >&2; exit 2; }
mapfile -t bad < <(git grep -l -E '^#include <torch/(torch|all|types|nn)\.h>' -- '*.h' ':!tests/support/parity.h' || true)
for f in "${bad[@]}"; do echo "check_torch_includes: $f includes LibTorch's API (use <ATen/core/Tensor.h> and include the API in the sources)"; done
echo "check_torch_includes: ${#bad[@]} headers include LibTorch's API"
[ ${#bad[@]} -eq 0 ]
