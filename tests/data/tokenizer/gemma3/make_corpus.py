#!/usr/bin/env python3
"""Writes corpus.json beside this script: strings for the Gemma 3 tokenizer parity test (test_gemma_tokenizer):
English, code, whitespace runs of every kind (Gemma's vocabulary has tokens for runs of spaces, tabs and
newlines, and added tokens for newline runs), emoji, CJK, Arabic, accents in NFC and NFD (Gemma does not
normalise them), characters its vocabulary lacks (byte fallback: control characters, CR, NBSP, private use,
rare CJK), the special and HTML added tokens, a literal U+2581, numbers, URLs, and a few long paragraphs (a
Gemma section between added tokens is one BPE word). Deterministic; pure Python."""
import json
import os
import random

rng = random.Random(20261129)
base = [
    # English and punctuation
    "Hello world!", "The quick brown fox jumps over the lazy dog.", "It's John's book, isn't it? We'll see.",
    "DON'T SHOUT", "rock'n'roll", "What colour is the circle at the top left?", "How many triangles are there?",
    "!!!???...,,,", "---___***", "....", "'", "''", "\"quoted\"", "(parenthesised) [bracketed] {braced}",
    "e.g. i.e. etc. vs. Mr. Dr.", "CamelCaseIdentifiersAndSnake_case_names", "ALLCAPS lowercase MiXeD",
    # whitespace forms
    "", " ", "  ", "   ", "a", " a", "a ", " a ", "  leading spaces", "trailing spaces   ", "hello   world",
    "tabs\tand\tmore\t\ttabs", "\t", "\t\t", "\t\t\tindent", "line one\nline two", "\n", "\n\n", "\n\n\n",
    "\n\n\nthree newlines first", "para one\n\npara two", "a\n \n b", "   \n   ", " \t \n \t ", "end\n",
    "windows\r\nline endings\r\n", "\r", "old mac\rline", "mixed \t\n\r\n  \t\tspace", "x" + " " * 40 + "y",
    "tab" + "\t" * 35 + "run", "nl" + "\n" * 33 + "run", "\u00a0non-breaking\u00a0space", "zero\u200bwidth\u200bspace",
    "ideographic\u3000space", "em\u2003space and thin\u2009space", "\v vertical \f formfeed",
    # numbers
    "1234567890", "0", "007", "3.14159 and 2,718,281", "Version 10.0.19045.2364", "phone: +1 (555) 123-4567",
    "1e-9 vs 1E+10", "-42, +17, 1/3, 50%", "2026-11-29T04:00:00Z", "0xDEADBEEF 0b1011 0o777", "١٢٣ ٤٥٦ (Arabic-Indic)",
    "१२३ (Devanagari digits)", "ⅠⅡⅢ Ⅻ", "½ ¼ ¾ ²³",
    # URLs, paths, markup
    "https://example.com/path?q=1&r=two#frag", "http://localhost:8080/api/v1/items/42", "user@example.org",
    "C:\\Users\\name\\file.txt", "/usr/local/bin/ropescope --help", "<div class=\"x\">text</div>",
    "<table><tr><td>cell</td></tr></table>", "<b>bold</b> and <i>italic</i> and <code>x</code>", "<h1>Title</h1>",
    "[multimodal]", "<mask>", "<unused0><unused6241>", "{\"key\": [1, 2, 3], \"null\": null}",
    # code
    "def f(x):\n    return x ** 2  # square\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "SELECT * FROM users WHERE id = 42;", "#include <vector>\nint main() {\n\treturn 0;\n}\n",
    "const add = (a, b) => a + b; // arrow", "if x != None and not y:\n        pass", "fn main() { println!(\"hi\"); }",
    "$ echo $HOME && ls -la | grep '.txt'", "x^2 + y^2 = z^2; ∑_{i=1}^{n} i = n(n+1)/2; ∫ f dx ≈ 0.5",
    "α β γ δ ∞ ≠ ≤ ≥ √ π", "matrix[i][j] = matrix[j][i];\n",
    # scripts
    "你好，世界！", "机器学习是人工智能的一个分支。", "日本語のテキストとカタカナ、ひらがな。", "한국어 문장입니다.",
    "Привет, мир! Как дела?", "Γειά σου Κόσμε", "مرحبا بالعالم", "السلام عليكم ورحمة الله", "שלום עולם",
    "नमस्ते दुनिया", "สวัสดีชาวโลก", "Tiếng Việt có dấu: ường, ữa", "ქართული ენა", "Հայերեն", "ᚠᚢᚦᚨᚱᚲ runes",
    "mixed 中文 and English 123 😀", "English مع العربية mixed",
    # accents, NFC and NFD (Gemma keeps both as written)
    "Ünïcödé àccénts façade naïve", "e\u0301 vs \u00e9 (NFD vs NFC)", "A\u030A Å \u212B", "cafe\u0301 café",
    "\u1100\u1161\u11a8 (jamo) 각", "ﬁ ligature", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３", "Ǆ ǅ ǆ Ǉ",
    # emoji
    "emoji 😀😃😄 and 👍🏽 and 👨‍👩‍👧‍👦 family", "flags 🇺🇸🇯🇵🇩🇪", "⚠️ warning ✔️ done ❤️", "🤖🧠📊📈",
    "🫠🫶🪿", "☕ ♻ ☃",
    # byte fallback: characters the vocabulary lacks
    "\x00nul", "bell\x07", "esc\x1b[0m", "\x01\x02\x03", "\ue000\ue001 private use", "\U00020000\U00020001 ext B",
    "\U0010fffd plane 16", "\u0378 unassigned", "\U0001d11e clef", "ƀƁƂ", "IJ ij Ŀ", "\ufffd replacement",
    "\ufeff byte order mark", "\ufeff\ufeff two marks", "\u2028line separator\u2029",
    # U+2581 written literally (Gemma's own space marker; decodes to a space)
    "\u2581", "\u2581\u2581", "a\u2581b", "\u2581\u2581\u2581 three markers",
    # special tokens and the chat template
    "<bos>", "<eos>", "<pad>", "<unk>", "<start_of_image>", "<end_of_image>", "<image_soft_token>",
    "<start_of_turn>", "<end_of_turn>", "<start_of_turn>user", "<start_of_turn>model\n",
    "<bos><start_of_turn>user\nWhat is in the image?<end_of_turn>\n<start_of_turn>model\n",
    "<bos><start_of_turn>user\nYou are a helpful assistant.\n\n<start_of_image>Describe the picture.<end_of_turn>\n<start_of_turn>model\n",
    "<start_of_image>" + "<image_soft_token>" * 8 + "<end_of_image>", "text<end_of_turn>text", "<bos><bos>",
    "<start_of_turn", "start_of_turn>", "<<bos>>", "< bos >", "<BOS>", "<start_of_image> leading", "trailing <end_of_image>",
]

long_text = (
    "Rotary position embeddings rotate each pair of query and key channels by an angle proportional to the "
    "token's position, so that the attention score depends only on the relative offset. Vision-language "
    "models extend this to two or three axes: time, height and width. "
)
paragraphs = [
    long_text * 8,
    ("def rotate(x, theta):\n    cos, sin = theta.cos(), theta.sin()\n    return x * cos + swap(x) * sin\n\n") * 6,
    "注意力机制中的位置编码。" * 40 + " mixed with English words " * 10,
    " ".join(str(rng.randint(0, 10 ** rng.randint(1, 9))) for _ in range(300)),
]

words = ["the", "model", "attention", "image", "token", "rotary", "position", "circle", "cone", "grid", "Gemma",
         "M-RoPE", "2.5", "42", "🙂", "注意力", "позиция", "θ", "é", "e\u0301", "\t", "  ", "\n", "\n\n", "'ll", "GPU",
         "x", "!", "<start_of_image>", "<end_of_turn>", "\u00a0", "\r\n", "https://a.b/c", "<b>", "ﬁ", "\u2581"]
seps = [" ", " ", " ", "", "  ", "\n", ", ", ". ", "\t", "   "]
corpus = base + paragraphs
while len(corpus) < 400:
    corpus.append("".join(rng.choice(words) + rng.choice(seps) for _ in range(rng.randint(1, 16))))
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "corpus.json"), "w", encoding="utf-8") as f:
    json.dump(corpus, f, ensure_ascii=True, indent=0)
    f.write("\n")
print(len(corpus), "strings")
