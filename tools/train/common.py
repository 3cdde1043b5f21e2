"""Shared pieces of the default-model trainer: corpus reading, the tokenizer, the model.

The model is a Llama-architecture transformer whose parameters are named and laid out
exactly as the GGUF tensors of tools/golden/reference_models.py ("token_embd.weight",
"blk.N.attn_q.weight" [out, in], ...), and whose math is the same: RMSNorm (eps inside the
square root), RoPE in GGUF's normal mode (adjacent pairs (2i, 2i+1) rotated by
pos * base^(-2i/head_dim)), grouped-query attention (query head h uses KV head
h // (n_heads / n_kv_heads)), SwiGLU, separate output matrix. The training forward is
batched and fast; export.py checks it against the plain reference on the exported weights.
"""
import json
import math
import os
import pathlib
import sys
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for _p in (ROOT / "tools" / "common", ROOT / "tools" / "golden"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

# The folder holding the TinyStories files below: --corpus-dir of train.py / eval_bpb.py sets
# it, else SERVESCOPE_CORPUS_DIR. See assets/models/README.md, "Getting the training text".
CORPUS_DIR: pathlib.Path | None = None
TRAIN_FILES = ["tinystories-train-part-01.txt", "tinystories-train-part-02-recased.txt"]
VALID_FILE = "tinystories-valid.txt"
STORY_SEPARATOR = "<|endoftext|>"
TOKENIZER_PATH = HERE / "servescope-stories.spm.model"
GGUF_PATH = ROOT / "assets" / "models" / "servescope-stories.gguf"
DEFAULT_OUT_DIR = ROOT / "build" / "train"   # checkpoints (git-ignored)


# ----------------------------------------------------------------------------- corpus

def read_stories(path: pathlib.Path) -> list[str]:
    """Stories of a corpus file: the text between `<|endoftext|>` lines, paragraphs joined
    by a single newline, surrounding whitespace stripped, empty records dropped."""
    stories, lines = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.strip() == STORY_SEPARATOR:
                text = "\n".join(lines).strip()
                if text:
                    stories.append(text)
                lines = []
            else:
                lines.append(line)
    text = "\n".join(lines).strip()
    if text:
        stories.append(text)
    return stories


def find_corpus_dir() -> pathlib.Path:
    """The training text's folder, or a one-line exit saying how to provide it."""
    folder = CORPUS_DIR or os.environ.get("SERVESCOPE_CORPUS_DIR")
    if not folder:
        sys.exit("no training text: pass --corpus-dir DIR (or set SERVESCOPE_CORPUS_DIR) to the "
                 "folder holding " + ", ".join(TRAIN_FILES + [VALID_FILE]) +
                 "; assets/models/README.md says how to get them")
    folder = pathlib.Path(folder)
    missing = [n for n in TRAIN_FILES + [VALID_FILE] if not (folder / n).is_file()]
    if missing:
        sys.exit(f"{folder} lacks {', '.join(missing)}; assets/models/README.md says how to get them")
    return folder


def train_stories(corpus_dir: pathlib.Path | None = None) -> list[str]:
    corpus_dir = corpus_dir or find_corpus_dir()
    out = []
    for name in TRAIN_FILES:
        out += read_stories(corpus_dir / name)
    return out


def valid_stories(corpus_dir: pathlib.Path | None = None) -> list[str]:
    return read_stories((corpus_dir or find_corpus_dir()) / VALID_FILE)


# ----------------------------------------------------------------------------- tokenizer

def train_tokenizer(stories: list[str], vocab_size: int, path: pathlib.Path,
                    sample_stories: int = 4000, seed: int = 1) -> None:
    """SentencePiece BPE with byte fallback on a sample of the training stories (one
    paragraph per line; identity normalisation so the engine's SPM agrees with it)."""
    import random
    import tempfile

    import sentencepiece as spm
    rng = random.Random(seed)
    sample = rng.sample(stories, min(sample_stories, len(stories)))
    with tempfile.TemporaryDirectory() as tmp:
        text = pathlib.Path(tmp) / "text.txt"
        text.write_text("\n".join(sample) + "\n", encoding="utf-8")
        spm.SentencePieceTrainer.train(
            input=str(text), model_prefix=str(pathlib.Path(tmp) / "m"), model_type="bpe",
            vocab_size=vocab_size, byte_fallback=True, normalization_rule_name="identity",
            remove_extra_whitespaces=False, add_dummy_prefix=True, split_digits=True,
            character_coverage=1.0, num_threads=1, input_sentence_size=0,
            shuffle_input_sentence=False, max_sentence_length=16384,
            unk_id=0, bos_id=1, eos_id=2, pad_id=-1, minloglevel=2)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((pathlib.Path(tmp) / "m.model").read_bytes())


def load_tokenizer(path: pathlib.Path = TOKENIZER_PATH):
    import sentencepiece as spm
    return spm.SentencePieceProcessor(model_file=str(path))


# ----------------------------------------------------------------------------- model

@dataclass
class ModelArgs:
    vocab_size: int = 2048
    dim: int = 256
    n_layers: int = 6
    n_heads: int = 8
    n_kv_heads: int = 4
    ffn_dim: int = 704
    context_length: int = 256
    rms_eps: float = 1e-5
    rope_base: float = 10000.0

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def rope_tables(args: ModelArgs, seq_len: int):
    hd = args.head_dim
    i = torch.arange(hd // 2, dtype=torch.float32)
    inv_freq = args.rope_base ** (-2.0 * i / hd)
    angle = torch.arange(seq_len, dtype=torch.float32)[:, None] * inv_freq[None, :]  # [T, hd/2]
    return torch.cos(angle), torch.sin(angle)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x [B, H, T, hd]; adjacent pairs (2i, 2i+1) rotated (GGUF normal mode)."""
    xr = x.reshape(*x.shape[:-1], -1, 2)
    even, odd = xr[..., 0], xr[..., 1]
    out = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    return out.reshape(x.shape)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        self.a = a
        hd = a.head_dim
        self.attn_norm = RMSNorm(a.dim, a.rms_eps)
        self.attn_q = nn.Linear(a.dim, a.n_heads * hd, bias=False)
        self.attn_k = nn.Linear(a.dim, a.n_kv_heads * hd, bias=False)
        self.attn_v = nn.Linear(a.dim, a.n_kv_heads * hd, bias=False)
        self.attn_output = nn.Linear(a.n_heads * hd, a.dim, bias=False)
        self.ffn_norm = RMSNorm(a.dim, a.rms_eps)
        self.ffn_gate = nn.Linear(a.dim, a.ffn_dim, bias=False)
        self.ffn_up = nn.Linear(a.dim, a.ffn_dim, bias=False)
        self.ffn_down = nn.Linear(a.ffn_dim, a.dim, bias=False)

    def forward(self, x, cos, sin, mask):
        a = self.a
        B, T, _ = x.shape
        hd = a.head_dim
        h = self.attn_norm(x)
        q = self.attn_q(h).view(B, T, a.n_heads, hd).transpose(1, 2)       # [B, H, T, hd]
        k = self.attn_k(h).view(B, T, a.n_kv_heads, hd).transpose(1, 2)
        v = self.attn_v(h).view(B, T, a.n_kv_heads, hd).transpose(1, 2)
        q = apply_rope(q, cos, sin)
        k = apply_rope(k, cos, sin)
        group = a.n_heads // a.n_kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        # scores = q k^T / sqrt(hd) + causal mask, fused in one baddbmm  [B*H, T, T]
        scores = torch.baddbmm(mask, q.reshape(B * a.n_heads, T, hd),
                               k.reshape(B * a.n_heads, T, hd).transpose(1, 2),
                               alpha=1.0 / math.sqrt(hd))
        att = torch.bmm(torch.softmax(scores, dim=-1), v.reshape(B * a.n_heads, T, hd))
        att = att.view(B, a.n_heads, T, hd)                                   # [B, H, T, hd]
        x = x + self.attn_output(att.transpose(1, 2).reshape(B, T, a.n_heads * hd))
        h = self.ffn_norm(x)
        return x + self.ffn_down(F.silu(self.ffn_gate(h)) * self.ffn_up(h))


class Llama(nn.Module):
    def __init__(self, a: ModelArgs):
        super().__init__()
        assert a.n_heads % a.n_kv_heads == 0 and a.n_kv_heads < a.n_heads
        assert a.dim % 32 == 0 and a.ffn_dim % 32 == 0 and (a.n_kv_heads * a.head_dim) % 32 == 0
        self.a = a
        self.token_embd = nn.Embedding(a.vocab_size, a.dim)
        self.blocks = nn.ModuleList(Block(a) for _ in range(a.n_layers))
        self.output_norm = RMSNorm(a.dim, a.rms_eps)
        self.output = nn.Linear(a.dim, a.vocab_size, bias=False)
        cos, sin = rope_tables(a, a.context_length)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.apply(self._init)
        for name, p in self.named_parameters():   # GPT-2 style scaled init of residual outputs
            if name.endswith("attn_output.weight") or name.endswith("ffn_down.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * a.n_layers))

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None):
        B, T = ids.shape
        mask = torch.full((T, T), float("-inf")).triu(1)
        cos, sin = self.cos[:T], self.sin[:T]
        x = self.token_embd(ids)
        for blk in self.blocks:
            x = blk(x, cos, sin, mask)
        logits = self.output(self.output_norm(x))
        if targets is None:
            return logits
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1),
                               ignore_index=-1)
        return logits, loss

    def gguf_tensors(self) -> dict:
        """Weights keyed by GGUF tensor names, float32 numpy, PyTorch order [out, in]."""
        out = {"token_embd.weight": self.token_embd.weight}
        for i, b in enumerate(self.blocks):
            for name in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                         "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"):
                out[f"blk.{i}.{name}.weight"] = getattr(b, name).weight
        out["output_norm.weight"] = self.output_norm.weight
        out["output.weight"] = self.output.weight
        return {k: v.detach().float().cpu().numpy() for k, v in out.items()}


def count_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


# ----------------------------------------------------------------------------- GGUF reading

def load_reference(path: pathlib.Path = GGUF_PATH, dtype=torch.float64):
    """(LlamaConfig, weights {GGUF name: torch tensor}, metadata) of an exported model, ready
    for tools/golden/reference_models.py's llama_forward."""
    from gguf_reader import read_gguf
    from reference_models import LlamaConfig
    md, tensors = read_gguf(path)
    cfg = LlamaConfig(
        vocab_size=len(md["tokenizer.ggml.tokens"]),
        dim=md["llama.embedding_length"], n_layers=md["llama.block_count"],
        n_heads=md["llama.attention.head_count"], n_kv_heads=md["llama.attention.head_count_kv"],
        ffn_dim=md["llama.feed_forward_length"], context_length=md["llama.context_length"],
        rms_eps=md["llama.attention.layer_norm_rms_epsilon"],
        rope_base=md["llama.rope.freq_base"], tied_output="output.weight" not in tensors)
    weights = {k: torch.from_numpy(v.astype(np.float64)).to(dtype) for k, v in tensors.items()}
    return cfg, weights, md
