#!/usr/bin/env bash
# The reference of test_gemma_tokenizer, made at test time (ctest's gemma3_tokenizer_reference): corpus.json
# encoded and decoded by transformers.js's tokenizer with Gemma 3's real tokenizer.json, both from the npm cache
# that scripts/fetch_npm_tokenizers.sh fills at set-up. Without that cache this fails, saying how to fill it.
#   tests/data/tokenizer/gemma3/make_reference.sh OUT.json
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
out=${1:?usage: make_reference.sh OUT.json}
command -v node >/dev/null || { echo "gemma3 reference: node not found (Debian: nodejs; scripts/setup.sh installs it)" >&2; exit 1; }
bash "$root/scripts/fetch_npm_tokenizers.sh" --check
node "$here/reference.js" "$(bash "$root/scripts/fetch_npm_tokenizers.sh" --dir)" "$here/corpus.json" "$out"
