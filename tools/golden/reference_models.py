"""PyTorch reference forward passes for the architectures ServeScope serves.

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


@dataclass(frozen=True)
class FamilyConfig:
    """The llama family's variants (qwen2, phi3, gemma, gemma2, gemma3, llama with RoPE
    scaling), each difference a named field with llama's value as default."""
    arch: str                # general.architecture
    vocab_size: int
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    ffn_dim: int
    context_length: int
    head_dim_override: int = 0  # attention.key_length (gemma); 0: dim // n_heads
    rms_eps: float = 1e-6
    rope_base: float = 10000.0
    rope_neox: bool = False       # pairs (i, i + hd/2) instead of (2i, 2i+1)
    rope_linear_factor: float = 0.0   # rope.scaling.type linear: positions / factor
    rope_freq_factors: tuple = ()     # llama 3's rope_freqs.weight (per pair divisor)
    rope_base_local: float = 10000.0  # local layers (gemma2: = rope_base; gemma3: 10000)
    qkv_bias: bool = False        # qwen2
    fused_qkv: bool = False       # phi3: attn_qkv.weight
    fused_gate_up: bool = False   # phi3: ffn_up.weight holds gate | up
    gelu_gate: bool = False       # gemma: gelu(gate) * up
    embed_scale: bool = False     # gemma: embeddings * sqrt(dim)
    post_norms: bool = False      # gemma2/3: post_attention_norm, post_ffw_norm
    qk_norm: bool = False         # gemma3: per-head RMSNorm of q and k
    attn_softcap: float = 0.0     # gemma2
    final_softcap: float = 0.0    # gemma2
    sliding_window: int = 0       # local layers see this many positions
    swa_pattern: int = 0          # layer l is local when l % pattern < pattern - 1
    tied_output: bool = False

    @property
    def head_dim(self) -> int:
        return self.head_dim_override or self.dim // self.n_heads

    def is_local(self, layer: int) -> bool:
        return (self.sliding_window > 0 and self.swa_pattern > 0
                and layer % self.swa_pattern < self.swa_pattern - 1)


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


def rope_angles(positions: torch.Tensor, head_dim: int, base: float, dtype,
                position_scale: float = 1.0, freq_factors=()) -> torch.Tensor:
    """[T, hd/2] angles pos * position_scale * base^(-2i/hd) / freq_factors[i]."""
    i = torch.arange(head_dim // 2, dtype=dtype)
    inv_freq = base ** (-2.0 * i / head_dim)
    if len(freq_factors):
        inv_freq = inv_freq / torch.tensor(freq_factors, dtype=dtype)
    return positions.to(dtype)[:, None] * position_scale * inv_freq[None, :]


def rope_neox(x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """GGML "neox" RoPE on x [T, n_heads, hd]: element i pairs with i + hd/2 (HF's
    rotate_half), turned by angle[:, i]."""
    half = x.shape[-1] // 2
    cos = torch.cos(angle)[:, None, :]
    sin = torch.sin(angle)[:, None, :]
    first, second = x[..., :half], x[..., half:]
    return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)


def rope_pairs(x: torch.Tensor, angle: torch.Tensor) -> torch.Tensor:
    """GGML "normal" RoPE with given angles [T, hd/2]: adjacent pairs (2i, 2i+1)."""
    cos = torch.cos(angle)[:, None, :]
    sin = torch.sin(angle)[:, None, :]
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def soft_cap(x: torch.Tensor, cap: float) -> torch.Tensor:
    return cap * torch.tanh(x / cap)


def general_attention(q, k, v, scale: float, softcap: float = 0.0, window: int = 0,
                      record: list | None = None) -> torch.Tensor:
    """Causal softmax attention with a score scale, optional soft-capping of the scaled scores
    and an optional sliding window (query t sees keys t - window < s <= t).
    q, k, v [T, H, hd] (k, v expanded for GQA); returns [T, H*hd]."""
    seq_len, n_heads, head_dim = q.shape
    scores = torch.einsum("qhd,khd->hqk", q, k) * scale
    if softcap > 0:
        scores = soft_cap(scores, softcap)
    qpos = torch.arange(seq_len)[:, None]
    kpos = torch.arange(seq_len)[None, :]
    hidden = kpos > qpos
    if window > 0:
        hidden = hidden | (qpos - kpos >= window)
    scores = scores.masked_fill(hidden, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    if record is not None:
        record.append(probs)
    return torch.einsum("hqk,khd->qhd", probs, v).reshape(seq_len, n_heads * head_dim)


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


def family_forward(w: dict, cfg: FamilyConfig, ids: list[int], record: list | None = None,
                   kv_round=None) -> torch.Tensor:
    """Logits [len(ids), vocab] for the llama family's variants, as llama.cpp runs them
    (gemma's norm weights are stored with the +1 already added by the converter)."""
    seq_len = len(ids)
    hd = cfg.head_dim
    q_dim, kv_dim = cfg.n_heads * hd, cfg.n_kv_heads * hd
    positions = torch.arange(seq_len)
    group = cfg.n_heads // cfg.n_kv_heads
    dtype = w["token_embd.weight"].dtype

    x = w["token_embd.weight"][torch.tensor(ids)]
    if cfg.embed_scale:
        x = x * math.sqrt(cfg.dim)
    for layer in range(cfg.n_layers):
        p = f"blk.{layer}."
        local = cfg.is_local(layer)
        h = rms_norm(x, w[p + "attn_norm.weight"], cfg.rms_eps)
        if cfg.fused_qkv:
            qkv = h @ w[p + "attn_qkv.weight"].T
            q, k, v = qkv[:, :q_dim], qkv[:, q_dim:q_dim + kv_dim], qkv[:, q_dim + kv_dim:]
        else:
            q = h @ w[p + "attn_q.weight"].T
            k = h @ w[p + "attn_k.weight"].T
            v = h @ w[p + "attn_v.weight"].T
        if cfg.qkv_bias:
            q = q + w[p + "attn_q.bias"]
            k = k + w[p + "attn_k.bias"]
            v = v + w[p + "attn_v.bias"]
        q = q.reshape(seq_len, cfg.n_heads, hd)
        k = k.reshape(seq_len, cfg.n_kv_heads, hd)
        v = v.reshape(seq_len, cfg.n_kv_heads, hd)
        if cfg.qk_norm:
            q = rms_norm(q, w[p + "attn_q_norm.weight"], cfg.rms_eps)
            k = rms_norm(k, w[p + "attn_k_norm.weight"], cfg.rms_eps)
        base = cfg.rope_base_local if local else cfg.rope_base
        scale = 1.0 / cfg.rope_linear_factor if cfg.rope_linear_factor and not local else 1.0
        angle = rope_angles(positions, hd, base, dtype, scale, cfg.rope_freq_factors)
        rotate = rope_neox if cfg.rope_neox else rope_pairs
        q, k = rotate(q, angle), rotate(k, angle)
        if kv_round is not None:
            k, v = kv_round(k), kv_round(v)
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        attn = general_attention(q, k, v, 1.0 / math.sqrt(hd), cfg.attn_softcap,
                                 cfg.sliding_window if local else 0, record)
        out = attn @ w[p + "attn_output.weight"].T
        if cfg.post_norms:
            out = rms_norm(out, w[p + "post_attention_norm.weight"], cfg.rms_eps)
        x = x + out

        h = rms_norm(x, w[p + "ffn_norm.weight"], cfg.rms_eps)
        if cfg.fused_gate_up:
            gate_up = h @ w[p + "ffn_up.weight"].T
            gate, up = gate_up[:, :cfg.ffn_dim], gate_up[:, cfg.ffn_dim:]
        else:
            gate = h @ w[p + "ffn_gate.weight"].T
            up = h @ w[p + "ffn_up.weight"].T
        act = gelu_tanh(gate) if cfg.gelu_gate else silu(gate)
        out = (act * up) @ w[p + "ffn_down.weight"].T
        if cfg.post_norms:
            out = rms_norm(out, w[p + "post_ffw_norm.weight"], cfg.rms_eps)
        x = x + out

    x = rms_norm(x, w["output_norm.weight"], cfg.rms_eps)
    out_weight = w["token_embd.weight"] if cfg.tied_output else w["output.weight"]
    logits = x @ out_weight.T
    if cfg.final_softcap > 0:
        logits = soft_cap(logits, cfg.final_softcap)
    return logits


def forward(w: dict, cfg, ids: list[int], record: list | None = None,
            kv_round=None) -> torch.Tensor:
    """Dispatch on the config type."""
    if isinstance(cfg, FamilyConfig):
        return family_forward(w, cfg, ids, record, kv_round)
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
