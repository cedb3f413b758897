#!/usr/bin/env bash
# The GPU checks in two steps, for a GPU machine that has PyTorch (CUDA) and transformers but no
# Qt and no way to install packages (the workplace's GPU image):
#   bash scripts/gpu_check.sh prepare   # here: Debian's Qt6/Eigen/PCRE2 packages into .gpu-debs/ (~30 MB)
#   bash scripts/gpu_check.sh run       # there (carry .gpu-debs): unpack, build against PyTorch's LibTorch
#                                       # without GUI and VTK, run the CUDA parity cases of all nine fixture
#                                       # families, compare five families with transformers at 1k and 4k tokens
#                                       # (profiling RopeScope's 1k runs), then the model suites
#   bash scripts/gpu_check.sh test      # there: the build and the tests only
#   bash scripts/gpu_check.sh bench     # there, after test: the benchmarks only (BENCH_ARGS: flags for
#                                       # tests/perf/compare_transformers.py in place of the families below)
#   bash scripts/gpu_check.sh quick     # there: build, the CUDA parity cases, then `speed` with and without the
#                                       # decoding step's CUDA graph (ROPESCOPE_CUDA_GRAPHS=0 for two of them)
#   bash scripts/gpu_check.sh speed     # there: build ropescope alone and time RopeScope's side only
#                                       # (SPEED_RUNS: "config:image-tokens:text-tokens ..."), the quickest
#                                       # remeasure after a change, for a lease with little time left
# Steps come in order of what matters most, so a run cut short by its time limit keeps what it did.
# The working tree with .gpu-debs is over the device tool's 64 MiB (2026-11-27: 48 + 31 MB). The bundled models
# (15 MB) are not needed there: before the call, `echo /resources/models/ >> .git/info/exclude; git rm -r -q --cached
# resources/models`; after it, `git reset -q resources/models` and take the line out of .git/info/exclude.
# Results and logs go to $OUT (the device tool's folder) or gpu-results/: six files at most, since the
# device tool brings back eight.
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

# Unpacks the carried packages into a prefix and points the loader, Qt and Fontconfig at it.
carried_env() {
  root=/tmp/ropescope-qt lib=/tmp/ropescope-qt/usr/lib/x86_64-linux-gnu
  if [ ! -d "$root/usr" ]; then
    mkdir -p "$root"
    for f in "$debs"/*.deb; do dpkg -x "$f" "$root"; done  # into a prefix: unpacking into / can break it
  fi
  # Only libraries the machine lacks go on the library path: Debian's zlib or expat must not shadow the
  # ones Python, PyTorch and pip's cmake wrapper were built against. Debian 12 ships some under lib/.
  local missing=$root/missing-libs known so
  rm -rf "$missing" && mkdir -p "$missing"
  known=$(ldconfig -p | awk 'NR > 1 {print $1}')
  for so in "$lib"/*.so.[0-9] "$lib"/*.so.[0-9][0-9] "$root"/lib/x86_64-linux-gnu/*.so.[0-9]; do  # sonames
    [ -e "$so" ] || continue
    grep -qxF "$(basename "$so")" <<< "$known" || ln -sf "$so" "$missing/"
  done
  # The image's own libdbus lacks the LIBDBUS_1_3 symbol versions libQt6DBus links against.
  ln -sf "$root/lib/x86_64-linux-gnu/libdbus-1.so.3" "$missing/"
  echo "carried libraries used: $(ls "$missing" | tr '\n' ' ')" > "$out/carried_libs.txt"
  export LD_LIBRARY_PATH=$missing${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export PKG_CONFIG_LIBDIR=$lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$root
  export QT_PLUGIN_PATH=$lib/qt6/plugins QT_QPA_PLATFORM=offscreen
  # No fonts are needed; a config that names none keeps Fontconfig from complaining on every start.
  printf '<?xml version="1.0"?>\n<fontconfig><cachedir>/tmp/ropescope-fc</cachedir></fontconfig>\n' > "$root/fonts.conf"
  export FONTCONFIG_FILE=$root/fonts.conf
}

build_configure() {
  local torch pkgconfig pybind11
  torch=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
  pkgconfig=$(command -v pkg-config || echo "$root/usr/bin/pkgconf")
  # The scheme worker embeds Python through pybind11; on the GPU image it is pip's, inside site-packages, where
  # find_package does not look (issue 57: the build needed this flag on the H100).
  pybind11=$(python3 -m pybind11 --cmakedir 2>/dev/null || true)
  # FindOpenGL (Qt6Gui's package needs it) does not look inside the prefix: name what it looks for.
  cmake --preset headless -B build-gpu \
        -DCMAKE_PREFIX_PATH="${torch:+$torch;}$lib/cmake;$root/usr/share/eigen3/cmake" \
        -DQt6_DIR="$lib/cmake/Qt6" -DPKG_CONFIG_EXECUTABLE="$pkgconfig" ${pybind11:+-Dpybind11_DIR="$pybind11"} \
        -DOPENGL_opengl_LIBRARY="$lib/libOpenGL.so.0" -DOPENGL_glx_LIBRARY="$lib/libGLX.so.0" \
        -DOPENGL_egl_LIBRARY="$lib/libEGL.so.1" -DOPENGL_gl_LIBRARY="$lib/libGL.so.1" -DOPENGL_INCLUDE_DIR="$root/usr/include" \
        -DOPENGL_GLX_INCLUDE_DIR="$root/usr/include" -DOPENGL_EGL_INCLUDE_DIR="$root/usr/include" \
        -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath-link,$lib" > "$out/configure.log" 2>&1 || { tail -40 "$out/configure.log"; return 1; }
}

build() {
  build_configure || return 1
  # What the parity cases and the benchmarks need first; the model suites are built after them.
  local t0=$SECONDS
  if ! cmake --build build-gpu -j"$(nproc)" --target ropescope test_forward_cli > "$out/build.log" 2>&1; then
    grep -q "bench_profile" "$out/build.log" || { tail -40 "$out/build.log"; return 1; }
    # This LibTorch's profiler API differs: build without `bench model --profile` rather than lose the run.
    grep -m5 "error" "$out/build.log" | cut -c1-300
    echo "bench_profile.cpp did not compile against this LibTorch: building without --profile"
    cmake -B build-gpu -DROPESCOPE_STAGE_PROFILER=OFF >> "$out/configure.log" 2>&1
    cmake --build build-gpu -j"$(nproc)" --target ropescope test_forward_cli >> "$out/build.log" 2>&1 ||
      { tail -40 "$out/build.log"; return 1; }
  fi
  echo "built ropescope and test_forward_cli in $((SECONDS - t0)) s"
}

# The CUDA forward of every fixture family against transformers' numbers (fp32 and bf16; the MoE members
# in fp32); a failure is counted, not fatal, so the rest still runs.
cuda_parity() {
  local t0=$SECONDS failed=0
  build-gpu/bin/test_forward_cli cudaMatchesFixtures > "$out/cuda_parity.log" 2>&1 || failed=1
  grep -E "^(PASS|FAIL|SKIP|Totals)|max err|QDEBUG|QWARN" "$out/cuda_parity.log" | cut -c1-300 || true
  echo "cuda parity: $((SECONDS - t0)) s"
  return $failed
}

# The model suites on this machine's CPU, with LibTorch as PyTorch ships it.
model_suites() {
  local t0=$SECONDS failed=0
  cmake --build build-gpu -j"$(nproc)" --target model_suites >> "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; return 1; }
  ctest --test-dir build-gpu -L model -j4 --output-on-failure > "$out/ctest.log" 2>&1 || failed=1
  grep -E "tests passed|tests failed|Failed|\*\*\*" "$out/ctest.log" || true
  echo "model suites: $((SECONDS - t0)) s"
  return $failed
}

# Real-size configs of five families against transformers (eager with attentions, and SDPA without), one
# image in about 1k and 4k tokens; RopeScope's 1k runs are also profiled. Each RopeScope run has its own
# time limit. The Qwen2-VL-2B study at 8k and 16k and four images: BENCH_ARGS="--sizes 1k,4k,8k,16k".
bench() {
  if ! python3 -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "no CUDA device visible to PyTorch: built and tested on the CPU only" | tee "$out/no_cuda.txt"
    return 0
  fi
  local configs=resources/configs/qwen35-0.8b.json,resources/configs/glm4v-9b.json,resources/configs/qwen3vl-2b.json
  configs+=,resources/configs/qwen2vl-2b.json,resources/configs/paddleocr-vl.json
  local t0=$SECONDS
  # shellcheck disable=SC2086 # BENCH_ARGS is a list of flags
  PYTHONUNBUFFERED=1 python3 tests/perf/compare_transformers.py --ropescope build-gpu/bin/ropescope \
    --json-out "$out/compare_transformers.json" \
    ${BENCH_ARGS:---config $configs --sizes 1k,4k --images 1 --explicit-up-to none --profile-sizes 1k --timeout 150} |
    python3 tests/perf/summarise_comparison.py
  echo "benchmarks: $((SECONDS - t0)) s"
}

# RopeScope's side alone, each run printed as it finishes: vision, prefill with capture, decoder, decode step.
speed() {
  local runs=${SPEED_RUNS:-"qwen3vl-2b:784:216 qwen35-0.8b:784:216 qwen35-0.8b:3136:960 qwen2vl-2b:784:216 paddleocr-vl:784:216 glm4v-9b:784:216"}
  local t0=$SECONDS item config image text
  cmake --build build-gpu -j"$(nproc)" --target ropescope > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; return 1; }
  echo "built ropescope in $((SECONDS - t0)) s"
  for item in $runs; do
    IFS=: read -r config image text <<< "$item"
    build-gpu/bin/ropescope bench model --config "resources/configs/$config.json" --random --device cuda --dtype bf16 \
      --image-tokens "$image" --text-tokens "$text" --runs 3 --json > "$out/speed_last.json" 2>> "$out/speed.log" || continue
    python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(sys.argv[2], int(r["tokens"]), "tokens:", ", ".join(
      f"{k} {r[k]:.1f}" for k in ("vision_ms","prefill_capture_ms","decoder_ms","cached_vision_lookup_ms","decode_step_ms",
      "decode_first_step_ms","decode_second_step_ms")), "graphs:", r.get("decode_graphs")))' \
      "$out/speed_last.json" "$config${ROPESCOPE_CUDA_GRAPHS:+ (ROPESCOPE_CUDA_GRAPHS=$ROPESCOPE_CUDA_GRAPHS)}" | tee -a "$out/speed.log"
  done
}

run() {
  out=${OUT:-gpu-results}
  mkdir -p "$out"
  carried_env
  local failed=0
  case "$1" in
    all) build && { cuda_parity || failed=1; bench || failed=1; model_suites || failed=1; } || failed=1 ;;
    test) build && { cuda_parity || failed=1; model_suites || failed=1; } || failed=1 ;;
    # The CUDA parity cases, then RopeScope's side of the benchmarks with the decoding step's CUDA graph, then
    # two of them again without it: the check of a change to the GPU path that fits a short lease.
    quick) build && { cuda_parity || failed=1
                      SPEED_RUNS="qwen3vl-2b:784:216 qwen35-0.8b:784:216 qwen35-0.8b:3136:960 qwen2vl-2b:784:216 paddleocr-vl:784:216" \
                        speed || failed=1
                      ROPESCOPE_CUDA_GRAPHS=0 SPEED_RUNS="qwen3vl-2b:784:216 qwen35-0.8b:3136:960" speed || failed=1
                      SPEED_RUNS="glm4v-9b:784:216" speed || failed=1; } || failed=1 ;;
    bench) bench || failed=1 ;;
    speed) build_configure && speed || failed=1 ;;
  esac
  return $failed
}

case "${1:-}" in
  prepare) prepare ;;
  run) run all ;;
  test) run test ;;
  bench) run bench ;;
  speed) run speed ;;
  quick) run quick ;;
  *) echo "usage: bash scripts/gpu_check.sh prepare|run|test|bench|quick|speed" >&2; exit 2 ;;
esac
