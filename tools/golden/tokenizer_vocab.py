"""The two test vocabularies of ServeScope (512 tokens each) and their GGUF metadata.

Importable by any golden-data script:
    from tokenizer_vocab import add_llama_tokenizer, add_gpt2_tokenizer
    add_llama_tokenizer(writer)   # tokenizer.ggml.* keys of a SentencePiece BPE vocabulary
    add_gpt2_tokenizer(writer)    # tokenizer.ggml.* keys of a byte-level BPE vocabulary

Both vocabularies are read from files committed under tests/data/tokenizer/, so every import
sees the same ids:
  llama-spm.model  a SentencePiece BPE model (byte fallback) trained by train_llama_model()
  gpt2-bpe.json    byte-level BPE tokens and merges learned by train_gpt2_vocabulary()
Run this file as a script to retrain both (only needed if the training text changes).
"""
import json
import pathlib
import random
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "common"))
from gguf_writer import ValueType  # noqa: E402

REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA_DIR = REPO_ROOT / "tests" / "data" / "tokenizer"
LLAMA_MODEL_PATH = DATA_DIR / "llama-spm.model"
GPT2_VOCAB_PATH = DATA_DIR / "gpt2-bpe.json"
VOCAB_SIZE = 512

# GGUF token types (llama.cpp's llama_token_type).
TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6

GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
GPT2_END_OF_TEXT = "<|endoftext|>"


# ----------------------------------------------------------------------------- training text

_WORDS = """the a an of to and in is it that for on with as was he she they we you I this be at by
not are from or have had but what all were when there can which their said if do will each
about how up out them then many some so these would other into has more her two like him see
time could no make than first been its who now people my made over did down only way find use
may water long little very after words called just where most know get through back much go
good new write our me man too any day same right look think also around another came come work
three word must because does part even place well such here take why things help put years
different away again off went old number great tell men say small every found still between
name should home big give air line set own under read last never us left end along while might
next sound below saw something thought both few those always looked show large often together
asked house don't world going want school important until form food keep children feet land
side without boy once animals life enough took sometimes four head above kind began almost live
page got earth need far hand high year mother light parts country father let night following
picture being study second eyes soon times story boys since white days ever paper hard near
sentence better best across during today others however sure means knew it's try told young
model token serving batch cache memory bandwidth compute prefill decode kernel tensor layer
head attention quantisation bytes weights vector matrix student lesson lecture laptop""".split()

_RARE_WORDS = ["café", "naïve", "über", "façade", "résumé", "jalapeño", "Zürich", "São"]
_PUNCTUATION = [".", ",", "!", "?", ";", ":", "-", "(", ")", "\"", "'"]


def training_text(lines: int = 6000, seed: int = 20240611) -> list[str]:
    """Deterministic English-like sentences with numbers, punctuation and a few accents."""
    rng = random.Random(seed)
    out = []
    for _ in range(lines):
        words = []
        for _ in range(rng.randint(4, 16)):
            roll = rng.random()
            if roll < 0.01:
                words.append(rng.choice(_RARE_WORDS))
            elif roll < 0.06:
                words.append(str(rng.randint(0, 2025)))
            else:
                word = rng.choice(_WORDS)
                words.append(word.capitalize() if rng.random() < 0.08 else word)
            if rng.random() < 0.07:
                words[-1] += rng.choice(_PUNCTUATION)
        sentence = " ".join(words)
        out.append(sentence[0].upper() + sentence[1:] + rng.choice([".", ".", ".", "?", "!"]))
    return out


# ----------------------------------------------------------------------------- llama (SentencePiece)

def train_llama_model(path: pathlib.Path = LLAMA_MODEL_PATH) -> None:
    import sentencepiece as spm
    with tempfile.TemporaryDirectory() as tmp:
        text = pathlib.Path(tmp) / "text.txt"
        text.write_text("\n".join(training_text()) + "\n", encoding="utf-8")
        spm.SentencePieceTrainer.train(
            input=str(text), model_prefix=str(pathlib.Path(tmp) / "m"), model_type="bpe",
            vocab_size=VOCAB_SIZE, byte_fallback=True, normalization_rule_name="identity",
            remove_extra_whitespaces=False, add_dummy_prefix=True, split_digits=True,
            character_coverage=0.9995, num_threads=1, seed_sentencepiece_size=100000,
            input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((pathlib.Path(tmp) / "m.model").read_bytes())


def llama_processor():
    import sentencepiece as spm
    return spm.SentencePieceProcessor(model_file=str(LLAMA_MODEL_PATH))


def _spm_token_type(sp, i: int) -> int:
    if sp.IsUnknown(i):
        return TOKEN_UNKNOWN
    if sp.IsControl(i):
        return TOKEN_CONTROL
    if sp.IsUnused(i):
        return TOKEN_UNUSED
    if sp.IsByte(i):
        return TOKEN_BYTE
    return TOKEN_NORMAL


def llama_vocabulary() -> dict:
    sp = llama_processor()
    n = sp.GetPieceSize()
    assert n == VOCAB_SIZE, n
    return {
        "model": "llama",
        "tokens": [sp.IdToPiece(i) for i in range(n)],
        "scores": [float(sp.GetScore(i)) for i in range(n)],
        "token_types": [_spm_token_type(sp, i) for i in range(n)],
        "merges": [],
        "bos_id": sp.bos_id(),
        "eos_id": sp.eos_id(),
        "unknown_id": sp.unk_id(),
        "add_bos": True,
        "add_space_prefix": True,
    }


# ----------------------------------------------------------------------------- gpt2 (byte-level BPE)

def gpt2_bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character map (printable bytes map to themselves)."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    mapping = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + extra)
            extra += 1
    return mapping


def gpt2_pretokenize(text: str) -> list[str]:
    import regex
    return regex.findall(GPT2_PATTERN, text)


def train_gpt2_vocabulary(path: pathlib.Path = GPT2_VOCAB_PATH) -> None:
    """Learns VOCAB_SIZE - 257 merges by pair frequency (ties: smallest pair) on training_text()."""
    byte_map = gpt2_bytes_to_unicode()
    word_counts: dict[tuple[str, ...], int] = {}
    for line in training_text(seed=7):
        for word in gpt2_pretokenize(line + "\n"):
            symbols = tuple(byte_map[b] for b in word.encode("utf-8"))
            word_counts[symbols] = word_counts.get(symbols, 0) + 1
    merges = []
    while len(merges) < VOCAB_SIZE - 256 - 1:
        pair_counts: dict[tuple[str, str], int] = {}
        for symbols, count in word_counts.items():
            for pair in zip(symbols, symbols[1:]):
                pair_counts[pair] = pair_counts.get(pair, 0) + count
        best = min(pair_counts, key=lambda p: (-pair_counts[p], p))
        merges.append(best)
        merged = {}
        for symbols, count in word_counts.items():
            out, i = [], 0
            while i < len(symbols):
                if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == best:
                    out.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + count
        word_counts = merged
    tokens = [byte_map[b] for b in range(256)] + [a + b for a, b in merges] + [GPT2_END_OF_TEXT]
    assert len(set(tokens)) == VOCAB_SIZE, "merge results must be distinct tokens"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"tokens": tokens, "merges": [f"{a} {b}" for a, b in merges]},
                               ensure_ascii=False, indent=0) + "\n", encoding="utf-8")


def gpt2_vocabulary() -> dict:
    data = json.loads(GPT2_VOCAB_PATH.read_text(encoding="utf-8"))
    tokens = data["tokens"]
    assert len(tokens) == VOCAB_SIZE, len(tokens)
    end_of_text = tokens.index(GPT2_END_OF_TEXT)
    return {
        "model": "gpt2",
        "tokens": tokens,
        "scores": [0.0] * len(tokens),
        "token_types": [TOKEN_CONTROL if i == end_of_text else TOKEN_NORMAL
                        for i in range(len(tokens))],
        "merges": data["merges"],
        "bos_id": end_of_text,
        "eos_id": end_of_text,
        "unknown_id": -1,
        "add_bos": False,
        "add_space_prefix": False,
    }


# ----------------------------------------------------------------------------- GGUF metadata

def add_tokenizer(writer, vocab: dict) -> None:
    """Adds the tokenizer.ggml.* keys llama.cpp reads for this vocabulary."""
    writer.add("tokenizer.ggml.model", ValueType.STRING, vocab["model"])
    writer.add_array("tokenizer.ggml.tokens", ValueType.STRING, vocab["tokens"])
    writer.add_array("tokenizer.ggml.scores", ValueType.FLOAT32, vocab["scores"])
    writer.add_array("tokenizer.ggml.token_type", ValueType.INT32, vocab["token_types"])
    if vocab["merges"]:
        writer.add_array("tokenizer.ggml.merges", ValueType.STRING, vocab["merges"])
    if vocab.get("pre"):
        writer.add("tokenizer.ggml.pre", ValueType.STRING, vocab["pre"])
    writer.add("tokenizer.ggml.bos_token_id", ValueType.UINT32, vocab["bos_id"])
    writer.add("tokenizer.ggml.eos_token_id", ValueType.UINT32, vocab["eos_id"])
    if vocab["unknown_id"] >= 0:
        writer.add("tokenizer.ggml.unknown_token_id", ValueType.UINT32, vocab["unknown_id"])
    writer.add("tokenizer.ggml.add_bos_token", ValueType.BOOL, vocab["add_bos"])
    writer.add("tokenizer.ggml.add_space_prefix", ValueType.BOOL, vocab["add_space_prefix"])


def add_llama_tokenizer(writer) -> dict:
    """Adds the 512-token SentencePiece vocabulary; returns it (see llama_vocabulary())."""
    vocab = llama_vocabulary()
    add_tokenizer(writer, vocab)
    return vocab


def add_gpt2_tokenizer(writer) -> dict:
    """Adds the 512-token byte-level BPE vocabulary; returns it (see gpt2_vocabulary())."""
    vocab = gpt2_vocabulary()
    add_tokenizer(writer, vocab)
    return vocab


if __name__ == "__main__":
    train_llama_model()
    train_gpt2_vocabulary()
    print(f"wrote {LLAMA_MODEL_PATH} and {GPT2_VOCAB_PATH}")
