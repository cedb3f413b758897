#!/usr/bin/env bash
# Every CMake package the build found (a *_DIR entry of CMakeCache.txt) must come from a Debian package
# that scripts/setup.sh installs, directly or through its dependencies: otherwise the README's commands
# work here only because someone installed that package by hand, and fail on a fresh machine.
#   scripts/check_setup_packages.sh [BUILD_DIR]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
cache="$build/CMakeCache.txt"
[ -f "$cache" ] || { echo "check_setup_packages: no $cache (build first)" >&2; exit 2; }
command -v dpkg >/dev/null && command -v apt-cache >/dev/null || { echo "check_setup_packages: needs dpkg and apt-cache (Debian)" >&2; exit 2; }

mapfile -t listed < <(bash scripts/setup.sh packages)
# The listed packages and everything they depend on (pre-depends included), by name.
declare -A closure=()
for p in "${listed[@]}"; do closure[$p]=1; done
while read -r name; do
  [ -n "$name" ] && closure[$name]=1
done < <(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces \
           --no-enhances "${listed[@]}" 2>/dev/null |
         sed -E -n 's/^ *\|?(Pre)?Depends: <?([^ >:]+)(:[a-z0-9]+)?>?.*/\2/p; s/^([^ :]+)(:[a-z0-9]+)?$/\1/p')

found=0 missing=0
while IFS= read -r dir; do
  [ -e "$dir" ] || continue
  found=$((found + 1))
  owners=$(dpkg -S "$dir" 2>/dev/null | head -1 | cut -d: -f1 | tr -d ' ') || true
  [ -n "$owners" ] || continue  # not from a package (built by hand): nothing to install
  ok=0
  IFS=, read -ra names <<<"$owners"
  for n in "${names[@]}"; do
    n=${n%%:*}
    [ -n "${closure[$n]:-}" ] && ok=1
  done
  if [ $ok -eq 0 ]; then
    echo "check_setup_packages: $owners (provides $dir) is not installed by scripts/setup.sh"
    missing=$((missing + 1))
  fi
done < <(sed -E -n 's/^([A-Za-z0-9_]+)_DIR:PATH=(\/usr\/[^ ]+)$/\1 \2/p' "$cache" | grep -v '^CMAKE_' | cut -d' ' -f2- | sort -u)

echo "check_setup_packages: $found CMake packages found by the build, $missing not installed by scripts/setup.sh"
[ $missing -eq 0 ]
