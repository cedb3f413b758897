#!/usr/bin/env bash
# Every C++ file git tracks is formatted by .clang-format (clang-format 14, Debian 12's): prints the files
# that are not and fails. `scripts/check_format.sh --fix` formats them in place.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format not found (scripts/setup.sh installs it)" >&2; exit 2; }
command -v git >/dev/null && [ -e .git ] || { echo "check_format: needs a git checkout (it checks the tracked files)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [ "${1:-}" = --fix ]; then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
# One clang-format for all files; its warnings start "FILE:LINE:COL: error: code should be clang-formatted".
mapfile -t bad < <(clang-format --style=file --dry-run --Werror "${files[@]}" 2>&1 | sed -n -E 's/^([^:]+):[0-9]+:[0-9]+: error: code should be clang-formatted.*/\1/p' | sort -u)
for f in "${bad[@]}"; do echo "check_format: $f is not formatted (scripts/check_format.sh --fix)"; done
echo "check_format: ${#files[@]} files, ${#bad[@]} not formatted"
[ ${#bad[@]} -eq 0 ]
