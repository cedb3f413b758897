#!/usr/bin/env bash
# The GPU half of issue #4 in two steps, for a GPU machine that has PyTorch (CUDA) and transformers but no
# Qt and no way to install packages (the workplace's GPU image):
#   bash scripts/gpu_check.sh prepare   # here: Debian's Qt6/Eigen/PCRE2 packages into .gpu-debs/ (~30 MB)
#   bash scripts/gpu_check.sh run       # there (carry .gpu-debs): unpack, build against PyTorch's LibTorch
#                                       # without GUI and VTK, run the model suites (CUDA parity cases
#                                       # included), bench, and compare with transformers
# Results and logs go to $OUT (the device tool's folder) or gpu-results/.
set -euo pipefail
cd "$(dirname "$0")/.."

debs=.gpu-debs
packages=(
  qt6-base-dev qt6-base-dev-tools qmake6 qmake6-bin qt6-svg-dev libqt6core6 libqt6gui6 libqt6svg6 libqt6test6 libqt6dbus6
  libqt6concurrent6 libqt6network6 libqt6opengl6 libqt6widgets6 libeigen3-dev
  libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
  # what Qt's libraries link (ldd on Debian 12), and the GL headers Qt6Gui's CMake package looks for
  libb2-1 libdouble-conversion3 libicu72 libmd4c0 libxkbcommon0 libharfbuzz0b libgraphite2-3 libfreetype6
  libfontconfig1 libpng16-16 libglib2.0-0 libdbus-1-3 libbrotli1 libbsd0 libmd0 libx11-6 libxcb1 libxau6
  libxdmcp6 libegl1 libglvnd0 libglx0 libopengl0 libgl1 libgl-dev libegl-dev libglvnd-dev libglx-dev libx11-dev
  pkgconf pkgconf-bin libpkgconf3  # pkg-config finds PCRE2; the GPU image may lack it
)

prepare() {
  # Keep the downloaded packages out of git's view (and so off the device copy's tracked files); a
  # checkout may have no .git/info yet, or be a worktree whose .git is a file.
  local exclude
  if exclude=$(git rev-parse --git-path info/exclude 2>/dev/null); then
    mkdir -p "$(dirname "$exclude")"
    grep -qx "/$debs/" "$exclude" 2>/dev/null || echo "/$debs/" >> "$exclude"
  fi
  mkdir -p "$debs"
  (cd "$debs" && apt-get download "${packages[@]}")
  du -sh "$debs"
}

run() {
  local out=${OUT:-gpu-results} root=/tmp/ropescope-qt
  mkdir -p "$out"
  rm -rf "$root" && mkdir -p "$root"
  for f in "$debs"/*.deb; do dpkg -x "$f" "$root"; done  # into a prefix: unpacking into / can break it
  local lib=$root/usr/lib/x86_64-linux-gnu missing=$root/missing-libs so
  # Only libraries the machine lacks go on the library path: Debian's zlib or expat must not shadow the
  # ones Python, PyTorch and pip's cmake wrapper were built against.
  mkdir -p "$missing"
  local known
  known=$(ldconfig -p | awk 'NR > 1 {print $1}')
  for so in "$lib"/*.so.[0-9] "$lib"/*.so.[0-9][0-9]; do  # sonames: what the loader looks for
    [ -e "$so" ] || continue
    grep -qxF "$(basename "$so")" <<< "$known" || ln -sf "$so" "$missing/"
  done
  echo "carried libraries used: $(ls "$missing" | tr '\n' ' ')" | tee "$out/carried_libs.txt"
  export LD_LIBRARY_PATH=$missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_LIBDIR=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
  local torch pkgconfig
  torch=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
  pkgconfig=$(command -v pkg-config || echo "$root/usr/bin/pkgconf")
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DROPESCOPE_GUI=OFF -DROPESCOPE_RENDER=OFF \
        -DCMAKE_PREFIX_PATH="${torch:+$torch;}$lib/cmake;$root/usr/share/eigen3/cmake" \
        -DQt6_DIR="$lib/cmake/Qt6" -DPKG_CONFIG_EXECUTABLE="$pkgconfig" \
        -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$lib" 2>&1 | tee "$out/configure.log"
  cmake --build build-gpu -j"$(nproc)" > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
  ctest --test-dir build-gpu -L model --output-on-failure 2>&1 | tee "$out/ctest.log"
  build-gpu/bin/test_forward_cli cudaMatchesFixtures 2>&1 | tee "$out/cuda_parity.log"
  if python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    build-gpu/bin/ropescope bench model --config resources/configs/qwen2vl-2b.json --random --device cuda --dtype bf16 \
      --json --output "$out/bench_2b_cuda_bf16.json"
    python3 tests/perf/compare_transformers.py --ropescope build-gpu/bin/ropescope 2>&1 | tee "$out/compare_transformers.json"
  else
    echo "no CUDA device visible to PyTorch: built and tested on the CPU only" | tee "$out/no_cuda.txt"
  fi
}

case "${1:-}" in
  prepare) prepare ;;
  run) run ;;
  *) echo "usage: bash scripts/gpu_check.sh prepare|run" >&2; exit 2 ;;
esac
