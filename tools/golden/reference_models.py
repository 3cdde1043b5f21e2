"""PyTorch reference forward passes for the two architectures ServeScope serves.

These are "the truth" the C++ engine is tested against, so they are written as plain,
readable functions with no cleverness and no dependency on any engine code.

Weights are a dict keyed by the GGUF tensor names (llama.cpp conventions), each a torch
tensor in PyTorch order [out, in] for matrices, e.g.
    "token_embd.weight"        [vocab, dim]
    "blk.0.attn_q.weight"      [n_head * head_dim, dim]
The functions compute in the dtype of the tensors they are given (float64 for golden data;
float32 works too, and is used as a sanity check of the reference itself).
"""
import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class LlamaConfig:
    vocab_size: int
    dim: int                 # embedding_length
    n_layers: int            # block_count
    n_heads: int             # attention.head_count
    n_kv_heads: int          # attention.head_count_kv (GQA when < n_heads)
    ffn_dim: int             # feed_forward_length
    context_length: int
    rms_eps: float = 1e-5
    rope_base: float = 10000.0
    tied_output: bool = False  # no output.weight: logits use token_embd.weight

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads


@dataclass(frozen=True)
class Gpt2Config:
    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    ffn_dim: int
    context_length: int
    ln_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.n_heads


# ----------------------------------------------------------------------------------------
# Building blocks

def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x / sqrt(mean(x^2) + eps) * weight, over the last dimension."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * weight


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
               eps: float) -> torch.Tensor:
    """(x - mean) / sqrt(biased variance + eps) * weight + bias, over the last dimension."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def silu(x: torch.Tensor) -> torch.Tensor:
    return x / (1.0 + torch.exp(-x))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), the GPT-2 / GGML form."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def rope_normal(x: torch.Tensor, positions: torch.Tensor, base: float) -> torch.Tensor:
    """GGUF/GGML "normal" RoPE (mode 0) on x [T, n_heads, head_dim].

    For each head, the adjacent pair (2i, 2i+1) is rotated by the angle
    pos * base^(-2i / head_dim), i = 0 .. head_dim/2 - 1:
        x'[2i]   = x[2i] cos - x[2i+1] sin
        x'[2i+1] = x[2i] sin + x[2i+1] cos
    """
    head_dim = x.shape[-1]
    i = torch.arange(head_dim // 2, dtype=x.dtype)
    inv_freq = base ** (-2.0 * i / head_dim)                        # [hd/2]
    angle = positions.to(x.dtype)[:, None] * inv_freq[None, :]      # [T, hd/2]
    cos = torch.cos(angle)[:, None, :]                              # [T, 1, hd/2]
    sin = torch.sin(angle)[:, None, :]
    even = x[..., 0::2]
    odd = x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     record: list | None = None) -> torch.Tensor:
    """Softmax attention with a causal mask, scale 1/sqrt(head_dim).

    q [T, n_heads, hd]; k, v [T, n_heads, hd] (already expanded for GQA). Returns [T, n_heads*hd].
    With `record`, appends the softmax probabilities [H, T, T] (zero above the diagonal).
    """
    seq_len, n_heads, head_dim = q.shape
    scores = torch.einsum("qhd,khd->hqk", q, k) / math.sqrt(head_dim)    # [H, T, T]
    future = torch.triu(torch.ones(seq_len, seq_len, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(future, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    if record is not None:
        record.append(probs)
    out = torch.einsum("hqk,khd->qhd", probs, v)                        # [T, H, hd]
    return out.reshape(seq_len, n_heads * head_dim)


# ----------------------------------------------------------------------------------------
# Architectures

def llama_forward(w: dict, cfg: LlamaConfig, ids: list[int], record: list | None = None,
                  kv_round=None) -> torch.Tensor:
    """Logits [len(ids), vocab] for a llama model (RMSNorm, RoPE, GQA, SwiGLU). With `record`,
    appends each layer's attention probabilities [n_heads, T, T]; with `kv_round`, keys and
    values [T, n_kv_heads, hd] pass through it as through a KV cache of a rounding type."""
    seq_len = len(ids)
    hd = cfg.head_dim
    positions = torch.arange(seq_len)
    group = cfg.n_heads // cfg.n_kv_heads   # query head h uses kv head h // group

    x = w["token_embd.weight"][torch.tensor(ids)]                       # [T, dim]
    for layer in range(cfg.n_layers):
        p = f"blk.{layer}."
        h = rms_norm(x, w[p + "attn_norm.weight"], cfg.rms_eps)
        q = (h @ w[p + "attn_q.weight"].T).reshape(seq_len, cfg.n_heads, hd)
        k = (h @ w[p + "attn_k.weight"].T).reshape(seq_len, cfg.n_kv_heads, hd)
        v = (h @ w[p + "attn_v.weight"].T).reshape(seq_len, cfg.n_kv_heads, hd)
        q = rope_normal(q, positions, cfg.rope_base)
        k = rope_normal(k, positions, cfg.rope_base)
        if kv_round is not None:
            k, v = kv_round(k), kv_round(v)
        k = k.repeat_interleave(group, dim=1)                           # [T, n_heads, hd]
        v = v.repeat_interleave(group, dim=1)
        x = x + causal_attention(q, k, v, record) @ w[p + "attn_output.weight"].T

        h = rms_norm(x, w[p + "ffn_norm.weight"], cfg.rms_eps)
        gate = silu(h @ w[p + "ffn_gate.weight"].T)
        up = h @ w[p + "ffn_up.weight"].T
        x = x + (gate * up) @ w[p + "ffn_down.weight"].T

    x = rms_norm(x, w["output_norm.weight"], cfg.rms_eps)
    out_weight = w["token_embd.weight"] if cfg.tied_output else w["output.weight"]
    return x @ out_weight.T


def gpt2_forward(w: dict, cfg: Gpt2Config, ids: list[int], record: list | None = None,
                 kv_round=None) -> torch.Tensor:
    """Logits [len(ids), vocab] for a gpt2 model (LayerNorm, learned positions, fused QKV,
    GELU, output tied to token_embd). `record` and `kv_round` as for llama_forward."""
    seq_len = len(ids)
    hd = cfg.head_dim
    d = cfg.dim

    x = w["token_embd.weight"][torch.tensor(ids)] + w["position_embd.weight"][:seq_len]
    for layer in range(cfg.n_layers):
        p = f"blk.{layer}."
        h = layer_norm(x, w[p + "attn_norm.weight"], w[p + "attn_norm.bias"], cfg.ln_eps)
        qkv = h @ w[p + "attn_qkv.weight"].T + w[p + "attn_qkv.bias"]   # [T, 3*dim]
        q = qkv[:, 0 * d:1 * d].reshape(seq_len, cfg.n_heads, hd)
        k = qkv[:, 1 * d:2 * d].reshape(seq_len, cfg.n_heads, hd)
        v = qkv[:, 2 * d:3 * d].reshape(seq_len, cfg.n_heads, hd)
        if kv_round is not None:
            k, v = kv_round(k), kv_round(v)
        attn = causal_attention(q, k, v, record)
        x = x + attn @ w[p + "attn_output.weight"].T + w[p + "attn_output.bias"]

        h = layer_norm(x, w[p + "ffn_norm.weight"], w[p + "ffn_norm.bias"], cfg.ln_eps)
        up = gelu_tanh(h @ w[p + "ffn_up.weight"].T + w[p + "ffn_up.bias"])
        x = x + up @ w[p + "ffn_down.weight"].T + w[p + "ffn_down.bias"]

    x = layer_norm(x, w["output_norm.weight"], w["output_norm.bias"], cfg.ln_eps)
    return x @ w["token_embd.weight"].T


def forward(w: dict, cfg, ids: list[int], record: list | None = None,
            kv_round=None) -> torch.Tensor:
    """Dispatch on the config type."""
    if isinstance(cfg, LlamaConfig):
        return llama_forward(w, cfg, ids, record, kv_round)
    if isinstance(cfg, Gpt2Config):
        return gpt2_forward(w, cfg, ids, record, kv_round)
    raise TypeError(f"unknown config {type(cfg).__name__}")


def greedy_generate(w: dict, cfg, prompt_ids: list[int], n_new: int):
    """Greedy continuation: re-run the full forward on prompt+generated, take the argmax.

    Returns (prompt_logits [len(prompt), vocab], generated ids, smallest top-1/top-2 logit
    gap seen over the prompt positions and every greedy step).
    """
    def top2_gap(logits_row: torch.Tensor) -> float:
        top = torch.topk(logits_row, 2).values
        return float(top[0] - top[1])

    prompt_logits = forward(w, cfg, prompt_ids)
    min_gap = min(top2_gap(row) for row in prompt_logits)
    ids = list(prompt_ids)
    generated = []
    for _ in range(n_new):
        last = forward(w, cfg, ids)[-1]
        min_gap = min(min_gap, top2_gap(last))
        nxt = int(torch.argmax(last))
        generated.append(nxt)
        ids.append(nxt)
    return prompt_logits, generated, min_gap
