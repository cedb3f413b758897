#!/usr/bin/env python3
"""Writes corpus.json: varied strings for tokenizer parity (scripts, emoji, digits, whitespace runs,
code, chat-template text with special tokens, NFC/NFD forms). Deterministic; pure Python."""
import json
import random

rng = random.Random(20261121)
base = [
    "Hello world!", "hello   world", "  leading spaces", "trailing spaces   ", "tabs\tand\tmore\t\ttabs",
    "line one\nline two", "windows\r\nline endings\r\n", "\n\n\nthree newlines first", "a\n \n b", "   \n   ",
    "It's John's book, isn't it? We'll see; they've gone. I'd say I'm RIGHT'S", "DON'T SHOUT", "rock'n'roll",
    "1234567890", "3.14159 and 2,718,281", "Version 10.0.19045.2364", "phone: +1 (555) 123-4567", "1e-9 vs 1E+10",
    "你好，世界！", "机器学习是人工智能的一个分支。", "日本語のテキストとカタカナ、ひらがな。", "한국어 문장입니다.",
    "Привет, мир! Как дела?", "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "สวัสดีชาวโลก",
    "Tiếng Việt có dấu: ường, ữa", "Ünïcödé àccénts façade naïve", "e\u0301 vs \u00e9 (NFD vs NFC)", "A\u030A Å",
    "\u1100\u1161\u11a8 (jamo)", "ﬁ ligature and Ⅻ roman", "ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "emoji 😀😃😄 and 👍🏽 and 👨‍👩‍👧‍👦 family", "flags 🇺🇸🇯🇵🇩🇪", "⚠️ warning ✔️ done ❤️", "🤖🧠📊📈",
    "def f(x):\n    return x ** 2  # square\n", "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "SELECT * FROM users WHERE id = 42;", "<div class=\"x\">text</div>", "{\"key\": [1, 2, 3], \"null\": null}",
    "https://example.com/path?q=1&r=two#frag", "user@example.org", "C:\\Users\\name\\file.txt",
    "x^2 + y^2 = z^2; ∑_{i=1}^{n} i = n(n+1)/2; ∫ f dx ≈ 0.5", "α β γ δ ∞ ≠ ≤ ≥ √ π",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "<|vision_start|><|image_pad|><|image_pad|><|image_pad|><|vision_end|>What is in the image?",
    "<|endoftext|>", "text<|im_end|>text", "<|im_start|><|im_start|>", "<|im_start", "|im_end|>",
    "What colour is the circle at the top left?", "Where is the red square? top left", "How many triangles are there?",
    "!!!???...,,,", "---___***", "....", "   !   ", "'", "''", "'s", " 's", "\u00a0non-breaking\u00a0space", "zero\u200bwidth",
    "mixed 中文 and English 123 😀", "CamelCaseIdentifiersAndSnake_case_names", "ALLCAPS lowercase MiXeD",
    "", " ", "a", "\t", "\n",
]
words = ["the", "model", "attention", "image", "token", "rotary", "position", "circle", "cone", "grid", "PTD",
         "Qwen2-VL", "M-RoPE", "2.5", "42", "🙂", "注意力", "позиция", "θ", "\t", "  ", "\n", "'ll", "GPU", "x", "!"]
corpus = list(base)
while len(corpus) < 340:
    n = rng.randint(1, 14)
    parts = []
    for _ in range(n):
        w = rng.choice(words)
        sep = rng.choice([" ", " ", " ", "", "  ", "\n", ", ", ". "])
        parts.append(w + sep)
    corpus.append("".join(parts))
with open("corpus.json", "w", encoding="utf-8") as f:
    json.dump(corpus, f, ensure_ascii=False, indent=0)
print(len(corpus), "strings")
