"""Writes the tokenizer golden data under tests/data/tokenizer/:

  llama-spm.gguf, gpt2-bpe.gguf   vocabulary-only GGUF files (tokenizer.ggml.* metadata)
  llama-spm-expected.json         ids of tricky strings from SentencePiece's own encoder
  gpt2-bpe-expected.json          ids from the straightforward reference below (regex module
                                  for the pattern, GPT-2's rank-based merge loop)
  {llama3,qwen2}-bpe.gguf         the gpt2 vocabulary with tokenizer.ggml.pre "llama-bpe" / "qwen2"
  {llama3,qwen2}-bpe-expected.json  ids from the same reference with that pre-tokeniser
                                  (make_pretokenizer_data.py's expressions; llama-bpe also
                                  ignores merges for a word that is a token, as llama.cpp does)
Cases: hand-picked tricky strings, then 300 random ones (fixed seed) per vocabulary (100 for
the llama3 and qwen2 pre-tokenisers).

Each expected file is {"cases": [{"text": ..., "ids": [...]}, ...]}.
Usage: python3 tools/golden/make_tokenizer_data.py
"""
import json
import pathlib
import random
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "common"))
import tokenizer_vocab as tv  # noqa: E402
from make_pretokenizer_data import SCHEMES, split  # noqa: E402
from gguf_writer import GgufWriter  # noqa: E402

COMMON_CASES = [
    "",
    " ",
    "   ",
    "Hello world",
    "hello world",
    " leading space",
    "trailing space ",
    "multiple   spaces   inside",
    "  two leading and two trailing  ",
    "digits 0123456789 and 2024-06-11, 3.14159",
    "accents: café, naïve, über, façade, résumé, Zürich",
    "Ünïcödé ÀÉÎÕÜ ñ ç ß ø å",
    "CJK: 日本語のテキスト 中文 한국어",
    "emoji: 😀 🚀👍🏽 ❤️ 🇫🇷",
    "tabs\tand\ttab\t\tdouble",
    "new\nline\n\nand\r\nCRLF\n",
    "mixed punctuation!?... (brackets) [square] {curly} <angle> \"quotes\" 'single' -- dashes; colons:",
    "it's they're we've I'm you'll he'd don't 'S 'RE",
    "unicode whitespace:\u00a0nbsp\u2003em\u3000ideographic\u2028line sep",
    "The model serves tokens from the cache, and the batch decodes in memory.",
    "x",
    "\n",
    "a\u0301 combining mark, Ω Ω ﬁ ligature",
    "mathematics ∑ ∫ √ ≤ ≥ ½ ² ³ Ⅻ",
    "$100 @user #tag 50% a+b=c a*b/c ~home | pipe \\ back",
]

GPT2_ONLY_CASES = [
    "'s't're've'm'll'd",
    "  \n  x",
    "hello   \n",
    "x \t y",
    "\u2581 is a plain character here",
]

# Where llama 3's and qwen2's pre-tokenisers differ from GPT-2's.
PRE_CASES = [
    "12345 678 9", "IT'S THEY'RE I'M", "a\n\n\nb", "x  \n  y", "tabs\t\tthen\n", "!!!\n\nwow",
    "'s's's", "3.14159 2024-06-11", "hello, world!\r\n", " ;x", "\u00bdx 1\u00b2",
]


# Pieces random strings are drawn from: words of the training text, characters the
# vocabularies lack (byte fallback), unusual whitespace and punctuation runs.
RANDOM_PIECES = (tv._WORDS[:80] + tv._RARE_WORDS + list("aeiouxyzAEZ0123456789")
                 + [" ", " ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "'s", "'ll", "'", "!?", "...",
                    "—", "日本", "中", "😀", "🚀", "ï", "Ω", "½", "\u0301", "ß", "Ġ", "<s>", "<0x41>"])


def random_cases(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(RANDOM_PIECES) for _ in range(rng.randint(1, 12))) for _ in range(count)]


def write_gguf(path: pathlib.Path, add) -> None:
    writer = GgufWriter()
    writer.add("general.architecture", tv.ValueType.STRING, "tokenizer-only")
    add(writer)
    writer.write(path)


def write_expected(path: pathlib.Path, cases: list[tuple[str, list[int]]]) -> None:
    lines = [json.dumps({"text": text, "ids": ids}, ensure_ascii=False) for text, ids in cases]
    path.write_text('{"cases": [\n' + ",\n".join(lines) + "\n]}\n", encoding="utf-8")


class ReferenceGpt2Tokenizer:
    """GPT-2's encoder as the original encoder.py does it, on our vocabulary."""

    def __init__(self, vocab: dict, pre: str = "gpt-2", ignore_merges: bool = False):
        self.ids = {token: i for i, token in enumerate(vocab["tokens"])}
        self.ranks = {tuple(m.split(" ")): r for r, m in enumerate(vocab["merges"])}
        self.byte_map = tv.gpt2_bytes_to_unicode()
        self.patterns = SCHEMES[pre]
        self.ignore_merges = ignore_merges

    def bpe(self, word: tuple[str, ...]) -> tuple[str, ...]:
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            merged, i = [], 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    merged.append(word[i] + word[i + 1])
                    i += 2
                else:
                    merged.append(word[i])
                    i += 1
            word = tuple(merged)
        return word

    def encode(self, text: str) -> list[int]:
        ids = []
        for word in split(text, self.patterns):
            spelled = tuple(self.byte_map[b] for b in word.encode("utf-8"))
            if self.ignore_merges and "".join(spelled) in self.ids:
                ids.append(self.ids["".join(spelled)])
                continue
            ids += [self.ids[symbol] for symbol in self.bpe(spelled)]
        return ids


def main() -> None:
    tv.DATA_DIR.mkdir(parents=True, exist_ok=True)
    write_gguf(tv.DATA_DIR / "llama-spm.gguf", tv.add_llama_tokenizer)
    write_gguf(tv.DATA_DIR / "gpt2-bpe.gguf", tv.add_gpt2_tokenizer)

    sp = tv.llama_processor()
    llama_cases = [(text, sp.encode(text)) for text in COMMON_CASES + random_cases(300, seed=1)]
    for text, ids in llama_cases:
        assert sp.decode(ids) == text, (text, sp.decode(ids))
    write_expected(tv.DATA_DIR / "llama-spm-expected.json", llama_cases)

    reference = ReferenceGpt2Tokenizer(tv.gpt2_vocabulary())
    gpt2_texts = COMMON_CASES + GPT2_ONLY_CASES + random_cases(300, seed=2)
    gpt2_cases = [(text, reference.encode(text)) for text in gpt2_texts]
    write_expected(tv.DATA_DIR / "gpt2-bpe-expected.json", gpt2_cases)

    for stem, pre, ignore_merges, seed in (("llama3", "llama-bpe", True, 3), ("qwen2", "qwen2", False, 4)):
        vocab = dict(tv.gpt2_vocabulary(), pre=pre)
        write_gguf(tv.DATA_DIR / f"{stem}-bpe.gguf", lambda writer: tv.add_tokenizer(writer, vocab))
        reference = ReferenceGpt2Tokenizer(vocab, pre, ignore_merges)
        texts = COMMON_CASES + GPT2_ONLY_CASES + PRE_CASES + random_cases(100, seed=seed)
        write_expected(tv.DATA_DIR / f"{stem}-bpe-expected.json",
                       [(text, reference.encode(text)) for text in texts])
    print(f"wrote tokenizer golden data to {tv.DATA_DIR}")


if __name__ == "__main__":
    main()
