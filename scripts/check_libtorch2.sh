#!/usr/bin/env bash
# Builds RopeScope against LibTorch 2.x on the CPU and runs its model suites, so the fused-attention
# (scaled_dot_product_attention) path is tested on every CI run although the host has LibTorch 1.13.
# Debian 13 (trixie) ships libtorch-dev 2.6; trixie is never added to the host's sources: it lives in a
# chroot made with debootstrap and kept between runs (ROPESCOPE_TRIXIE_CHROOT, default below).
#   bash scripts/check_libtorch2.sh          # make the chroot if needed, build without GUI/VTK what the model suites need, ctest -L model
# Needs root (debootstrap, chroot, mounting /proc), as the README's set-up commands do.
set -euo pipefail
cd "$(dirname "$0")/.."

root=${ROPESCOPE_TRIXIE_CHROOT:-/var/cache/ropescope/trixie}
mirror=${ROPESCOPE_TRIXIE_MIRROR:-http://deb.debian.org/debian}
packages=(
  cmake ninja-build g++ ccache pkg-config     # toolchain
  libtorch-dev                               # LibTorch 2.6 (CPU): the point of this chroot
  libopenblas0-pthread                       # its GEMMs: trixie's default libblas.so.3 is the reference BLAS (docs/SPEED.md)
  qt6-base-dev qt6-svg-dev libeigen3-dev libpcre2-dev   # what a build without GUI and VTK needs
  zlib1g-dev                                 # .npz dumps (check-positions)
  python3-dev pybind11-dev python3-numpy     # Python schemes (model runs under a scheme file)
)
sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
started=$(date +%s)

make_chroot() {
  # Built beside its final place and renamed when complete, so an interrupted run never leaves a
  # half-made chroot that later runs would trust.
  local partial=$root.partial
  $sudo rm -rf "$partial"
  $sudo mkdir -p "$(dirname "$root")"
  command -v debootstrap >/dev/null || {
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends debootstrap
  }
  echo "check_libtorch2: debootstrap trixie into $partial"
  $sudo debootstrap --variant=minbase trixie "$partial" "$mirror" > /tmp/ropescope-debootstrap.log 2>&1 \
    || { tail -20 /tmp/ropescope-debootstrap.log; echo "check_libtorch2: debootstrap failed (log above)" >&2; exit 1; }
  install_packages "$partial"
  $sudo mv "$partial" "$root"
}

# The build dependencies, installed where missing (a cached chroot may predate a newly listed package).
install_packages() {
  local dir=$1
  in_root "$dir" "missing=(); for p in ${packages[*]}; do dpkg-query -W -f='\${Status}' \$p 2>/dev/null | grep -q 'install ok installed' || missing+=(\$p); done; \
    [ \${#missing[@]} -eq 0 ] || { echo \"check_libtorch2: installing \${missing[*]}\"; apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \${missing[@]} > /tmp/apt.log 2>&1 || { tail -20 /tmp/apt.log; exit 1; }; }" \
    || { echo "check_libtorch2: installing the build dependencies in $dir failed" >&2; exit 1; }
}

# Runs a command inside a chroot with /proc mounted (cmake and ctest read it), unmounting on any exit.
in_root() {
  local dir=$1 command=$2
  $sudo mount -t proc proc "$dir/proc"
  local rc=0
  $sudo chroot "$dir" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 bash -c "$command" || rc=$?
  $sudo umount "$dir/proc"
  return $rc
}

[ -d "$root" ] || make_chroot
install_packages "$root"
made=$(date +%s)

# The tracked tree (and untracked, not ignored files) goes in; build outputs and ccache stay in the chroot.
# Files are stamped with the copy's time (tar -m), not their own: a tree whose files are older than the last
# build's outputs (another checkout built since) would otherwise look up to date to ninja and run stale
# binaries. Every source then recompiles, through ccache, so only what changed costs a compile.
$sudo rm -rf "$root/src/ropescope" && $sudo mkdir -p "$root/src/ropescope"
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | $sudo tar -xmf - -C "$root/src/ropescope"

in_root "$root" "cd /src/ropescope && export CCACHE_DIR=/root/.ccache CCACHE_BASEDIR=/src/ropescope && \
  cmake --preset headless -B /src/build \
        -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache > /src/configure.log 2>&1 || { tail -40 /src/configure.log; exit 1; } && \
  echo \"check_libtorch2: LibTorch \$(grep -A1 'define TORCH_VERSION ' /usr/include/torch/csrc/api/include/torch/version.h | tail -1)\" && \
  cmake --build /src/build -j2 --target model_suites > /src/build.log 2>&1 || { tail -40 /src/build.log; exit 1; } && \
  : one suite at a time: LibTorch 2.6 runs OpenMP on every core, and two suites at once took test_bundled_task from 56 s to 270 s && \
  ctest --test-dir /src/build -L model --output-on-failure"
echo "check_libtorch2: passed (chroot $((made - started)) s, build and model suites $(($(date +%s) - made)) s)"
