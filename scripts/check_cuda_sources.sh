#!/usr/bin/env bash
# The sources that see LibTorch's CUDA API (compiled with ROPESCOPE_TORCH_CUDA) build only against a CUDA LibTorch,
# which no Debian package has: GPU machines build them, rarely. Here each is compiled for syntax (-fsyntax-only,
# the project's warnings as errors) against Debian's LibTorch headers, which carry ATen/cuda and c10/cuda, and a
# declarations-only stand-in for the CUDA runtime header (tests/cuda_stub/). A change that breaks one shows here,
# not on a lent GPU machine's clock.
set -euo pipefail
cd "$(dirname "$0")/.."
qt=/usr/include/x86_64-linux-gnu/qt6
flags=(-std=c++17 -fsyntax-only -fPIC -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion -Werror
       -DQT_NO_KEYWORDS -DROPESCOPE_TORCH_CUDA -I. -Itests/cuda_stub -isystem /usr/include/eigen3 -isystem "$qt"
       -isystem "$qt/QtCore" -isystem "$qt/QtGui" -isystem /usr/include/torch/csrc/api/include)
mapfile -t sources < <(git ls-files '*.cpp' | xargs grep -l '^#ifdef ROPESCOPE_TORCH_CUDA' | sort)
[ "${#sources[@]}" -gt 0 ] || { echo "no source has a ROPESCOPE_TORCH_CUDA section" >&2; exit 1; }
failed=0
for f in "${sources[@]}"; do
  if g++ "${flags[@]}" "$f"; then echo "ok: $f"; else echo "FAILED: $f" >&2; failed=1; fi
done
exit $failed
