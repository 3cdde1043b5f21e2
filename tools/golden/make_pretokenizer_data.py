"""Writes tests/data/tokenizer/pretokenizer-splits.json: the expected pre-tokeniser splits of
tricky strings for every scheme ServeScope supports (engine/tokenizer/pretokenizer.cpp).

The reference is Python's `regex` module (the engine GPT-2's own encoder.py used), with the
schemes' expressions typed in here again from llama.cpp's src/llama-vocab.cpp
(llm_tokenizer_bpe). A scheme is a list of expressions applied in turn; each splits every
piece left by the one before into its matches and the text between them (llama.cpp's
unicode_regex_split, Hugging Face's Sequence of Split pre-tokenisers).

Output: {"texts": [...], "splits": {"<scheme>": [[byte length of each piece], ...], ...}}
(one list per text, in the order of "texts"; the pieces concatenate to the text).
Usage: /usr/bin/python3 tools/golden/make_pretokenizer_data.py   (deterministic, < 1 s)
"""
import json
import pathlib
import random

import regex

OUT = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "tokenizer" / "pretokenizer-splits.json"

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
CONTRACTIONS = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
CJK = r"[一-龥ࠀ-一가-퟿]+"
CASED = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
CAPITAL = r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"

SCHEMES = {
    "gpt-2": [GPT2],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "llama-bpe": [CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "qwen2": [CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "qwen35": [CONTRACTIONS + r"|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "smollm": [r"\p{N}", GPT2],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "deepseek-llm": [r"[\r\n]", r"\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
                     r"\s?[!-/:-~！-／：-～‘-‟　-。]+", r"\s+$", CJK, r"\p{N}+"],
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", CJK, r"\p{N}"],
    "deepseek-v3": [r"\p{N}{1,3}", r"[一-龥぀-ゟ゠-ヿ]+",
                    r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""],
    "gpt-4o": [CASED + "(?:" + CONTRACTIONS + ")?|" + CAPITAL + "(?:" + CONTRACTIONS + ")?"
               + r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
    "tekken": [CASED + "|" + CAPITAL + r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"],
}


def split(text: str, patterns: list[str]) -> list[str]:
    pieces = [text] if text else []
    for pattern in patterns:
        finer = []
        for piece in pieces:
            done = 0
            for match in regex.finditer(pattern, piece):
                if match.start() > done:
                    finer.append(piece[done:match.start()])
                if match.end() > match.start():
                    finer.append(match.group())
                done = max(done, match.end())
            if done < len(piece):
                finer.append(piece[done:])
        pieces = finer
    return pieces


CASES = [
    "",
    " ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n", "\n ", "\t\t x", "a\n\nb", "a \n b", "a\r\n\r\nb",
    "x \t y", "trailing  ", "  leading", "a   b", "a\t\tb", "a \t\n b", "end\n", "end \n\n",
    "line one\nline two\n\tindented\n    four spaces\n",
    # contractions, in many cases
    "it's", "It'S", "IT'S", "they're", "THEY'RE", "They'Re", "we've", "WE'VE", "I'm", "I'M",
    "you'll", "YOU'LL", "You'Ll", "he'd", "HE'D", "don't", "DON'T", "'s't're've'm'll'd",
    "'S'T'RE'VE'M'LL'D", "'sa 'Sa 'x", "rock 'n' roll", "o'clock", "l'amour", "''s", "' s",
    "it\u2019s typographic", "dogs' bowls", "'", "''", "'ll've",
    # digits, runs of 1 to 5 and more
    "1", "12", "123", "1234", "12345", "123456", "1234567", "a1b22c333d4444e55555",
    "3.14159", "1,000,000", "2024-06-11", "v1.2.3", "0x1F", "1e-5", "-42", "+7", "12ab34",
    "\u0661\u0662\u0663\u0664",  # Arabic-Indic digits
    "\u00bd \u00b2 \u2167 \u2460",  # number forms: No, No, Nl, No
    "\uff11\uff12\uff13\uff14",  # fullwidth digits
    # CJK, kana, hangul
    "日本語のテキスト", "中文字符和English混合", "한국어 텍스트", "カタカナとひらがな", "漢字123漢字",
    "「引用」、句読点。", "全角！？", "ｈａｌｆ　ｗｉｄｔｈ",
    # emoji, ZWJ sequences, flags, skin tones, variation selectors
    "😀", "😀😀😀", "👩\u200d💻 coder", "👨\u200d👩\u200d👧\u200d👦", "🇫🇷🇩🇪", "👍🏽", "❤\ufe0f",
    "hi😀there", " 🚀 launch", "a\u200db", "zero\u200bwidth",
    # combining marks
    "e\u0301", "cafe\u0301", "a\u0301\u0302\u0303", "\u0301start", "n\u0303o", "Z\u0351\u0352\u0353algo",
    "\u0928\u092e\u0938\u094d\u0924\u0947",  # Devanagari with virama
    "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35",  # Thai with vowel marks
    # punctuation clusters
    "...", "!?!", "?!...", "--", "---a", "(a)", "[x]{y}<z>", "\"quoted\"", "a+b=c", "a*b/c",
    "#tag @user $100 50%", "~home | pipe \\ back", "<|endoftext|>", "<s>hi</s>", "::", "a::b",
    ";)", ":-)", "!!!1!!", "....\n", "?\n\n", "// comment\n", "/* c */", "#!/bin/sh\n",
    "x/y/z", "http://example.com/a?b=1&c=2", "email@example.com", "`code`", "^caret^",
    # mixed scripts
    "Привет мир", "Γειά σου κόσμε", "שלום עולם", "مرحبا بالعالم", "Ünïcödé ÀÉÎÕÜ ñ ç ß ø å",
    "mixedΑλφαβητοlatin", "abcАБВ", "straße STRASSE", "ǅemal ǈ ǋ", "ﬁﬂ ligatures", "Ωmega ℃ ℉",
    "İstanbul ıi", "ſ 'ſ", "K Kelvin",
    # unusual whitespace
    "a\u00a0b", "a\u3000b", "a\u2003b", "a\u2028b", "a\u2029b", "a\u0085b", "a\u000bb", "a\u000cb",
    "a\u001cb", "a\u001fb", "a\u001c\u001fb x", "a\u180eb", "a\u200bb", "a\u202fb", "\u00a0\u00a0x", " \u3000 x",
    # valid UTF-8 that looks odd: controls, noncharacters, private use, the last code points
    "\u0000", "a\u0000b", "\u0001\u0002", "\u007f", "\u0080\u009f", "\ufeffBOM", "\ufffd", "\uffff",
    "\ue000 private", "\U0010ffff", "\U0001d400 math bold A", "\U00010400 Deseret", "\u2581space marker",
    # code
    "def f(x):\n    return x**2\n", "if (a && b) { c++; }", "for i in range(10):\n\tprint(i)",
    "int main(void) { return 0; }", "x = [1, 2, 3]", "SELECT * FROM t;", "<div class=\"a\">b</div>",
    # sentences
    "Hello world", "Hello, world! How's it going?", "The model serves 128 tokens/s.",
    "She said: \"It's 5 o'clock.\"", "I've got 99 problems but a glitch ain't one.",
]

# Random strings drawn from the hardest pieces above, so that they meet each other.
PIECES = ["a", "Z", "word", " word", "'s", "'LL", "'", "1", "22", "333", "4444", "55555", " ", "  ",
          "\t", "\n", "\r\n", "\u00a0", "\u3000", "日本", "中", "한", "カ", "😀", "👩\u200d💻", "🇫🇷",
          "e\u0301", "\u0301", "...", "!?", "-", "/", "$", "<|", "|>", "Привет", "Ω", "½", "\u0661",
          "ß", "\u200d", "\u0000", "\U0001d400", "x", "é", "\u2581"]


def random_cases(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(PIECES) for _ in range(rng.randint(1, 10))) for _ in range(count)]


def main() -> None:
    texts = CASES + random_cases(200, seed=15)
    splits = {}
    for name, patterns in SCHEMES.items():
        rows = []
        for text in texts:
            pieces = split(text, patterns)
            assert "".join(pieces) == text, (name, text, pieces)
            rows.append([len(p.encode("utf-8")) for p in pieces])
        splits[name] = rows
    lines = ['{"texts": ' + json.dumps(texts, ensure_ascii=False) + ',', '"splits": {']
    lines.append(",\n".join(f'"{name}": ' + json.dumps(rows, separators=(",", ":"))
                            for name, rows in splits.items()))
    lines.append("}}")
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {len(texts)} texts x {len(splits)} schemes to {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
