"""Make the small random-weight test models and their golden logits.

    /usr/bin/python3 tools/golden/make_models.py

writes tests/data/models/<name>.gguf and <name>.json for
    llama-{f32,f16,q8_0,q4_0}, gpt2-{f32,f16,q8_0,q4_0}, llama-tied-f32,
    llama-{q4_1,q5_0,q5_1,bf16} (the same llama weights; a prompt of their own),
    llama-{q2_k,q3_k,q4_k,q5_k,q6_k} (a llama of dim 256 and ffn 256: K-quant rows must be
    whole super-blocks of 256).
Re-running produces byte-identical files (fixed seeds, no timestamps).

The golden logits are computed in float64 by tools/golden/reference_models.py from the
weights exactly as stored in the file (dequantised with tools/common/gguf_writer.py), so the
engine is checked against the file it loads, not against the pre-quantisation floats.
"""
import hashlib
import json
import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (HERE, ROOT / "tools" / "common", ROOT):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from gguf_reader import read_gguf_raw  # noqa: E402
from gguf_reader import read_gguf_raw  # noqa: E402
from gguf_writer import GgmlType, GgufWriter, ValueType, dequantize  # noqa: E402
from reference_models import Gpt2Config, LlamaConfig, greedy_generate, forward  # noqa: E402
from tokenizer_vocab import add_gpt2_tokenizer, add_llama_tokenizer  # noqa: E402

OUT_DIR = ROOT / "tests" / "data" / "models"
PROMPT_LEN = 13
N_GENERATE = 20
MIN_MARGIN = 1e-3        # smallest acceptable top-1/top-2 logit gap (greedy well-posed)
MIN_DISTINCT_GREEDY = 8  # the greedy continuation must not collapse onto a few tokens
N_PROMPT_CANDIDATES = 10

WEIGHT_TYPES = {"f32": GgmlType.F32, "f16": GgmlType.F16,
                "q8_0": GgmlType.Q8_0, "q4_0": GgmlType.Q4_0,
                "q4_1": GgmlType.Q4_1, "q5_0": GgmlType.Q5_0, "q5_1": GgmlType.Q5_1,
                "bf16": GgmlType.BF16,
                "q2_k": GgmlType.Q2_K, "q3_k": GgmlType.Q3_K, "q4_k": GgmlType.Q4_K,
                "q5_k": GgmlType.Q5_K, "q6_k": GgmlType.Q6_K}
K_TYPES = ("q2_k", "q3_k", "q4_k", "q5_k", "q6_k")
# general.file_type as llama.cpp writes it (the "mostly" type of the matrices).
# A file of one K type is llama.cpp's "_S" (small) variant of it, whose default type it is.
FILE_TYPES = {"f32": 0, "f16": 1, "q8_0": 7, "q4_0": 2, "q4_1": 3, "q5_0": 8, "q5_1": 9,
              "bf16": 32, "q2_k": 10, "q3_k": 11, "q4_k": 14, "q5_k": 16, "q6_k": 18}

LLAMA = LlamaConfig(vocab_size=512, dim=64, n_layers=2, n_heads=4, n_kv_heads=2,
                    ffn_dim=192, context_length=128, rms_eps=1e-5, rope_base=10000.0)
LLAMA_TIED = LlamaConfig(**{**LLAMA.__dict__, "tied_output": True})
LLAMA_K = LlamaConfig(**{**LLAMA.__dict__, "dim": 256, "ffn_dim": 256})
GPT2 = Gpt2Config(vocab_size=512, dim=64, n_layers=2, n_heads=4, ffn_dim=256,
                  context_length=128, ln_eps=1e-5)


# ----------------------------------------------------------------------------------------
# Random weights (float32, PyTorch order [out, in])

def _normal(gen: torch.Generator, shape, std: float, mean: float = 0.0) -> np.ndarray:
    return (mean + std * torch.randn(*shape, generator=gen, dtype=torch.float32)).numpy()


def llama_weights(cfg: LlamaConfig, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    d, hd, f = cfg.dim, cfg.head_dim, cfg.ffn_dim
    # Matrix stds are for dim 64; wider models scale them by sqrt(64 / dim) so that activations
    # (and the float32-vs-float64 gap of the reference) stay the same size. 1.0 at dim 64.
    s = (64 / d) ** 0.5
    w = {"token_embd.weight": _normal(gen, (cfg.vocab_size, d), 0.3 * s)}
    for layer in range(cfg.n_layers):
        p = f"blk.{layer}."
        w[p + "attn_norm.weight"] = _normal(gen, (d,), 0.1, mean=1.0)
        w[p + "attn_q.weight"] = _normal(gen, (cfg.n_heads * hd, d), 0.3 * s)
        w[p + "attn_k.weight"] = _normal(gen, (cfg.n_kv_heads * hd, d), 0.3 * s)
        w[p + "attn_v.weight"] = _normal(gen, (cfg.n_kv_heads * hd, d), 0.2 * s)
        w[p + "attn_output.weight"] = _normal(gen, (d, cfg.n_heads * hd), 0.2 * s)
        w[p + "ffn_norm.weight"] = _normal(gen, (d,), 0.1, mean=1.0)
        w[p + "ffn_gate.weight"] = _normal(gen, (f, d), 0.2 * s)
        w[p + "ffn_up.weight"] = _normal(gen, (f, d), 0.2 * s)
        w[p + "ffn_down.weight"] = _normal(gen, (d, f), 0.2 * s)
    w["output_norm.weight"] = _normal(gen, (d,), 0.1, mean=1.0)
    w["output.weight"] = _normal(gen, (cfg.vocab_size, d), 0.3 * s)
    return w


def gpt2_weights(cfg: Gpt2Config, seed: int) -> dict:
    gen = torch.Generator().manual_seed(seed)
    d, f = cfg.dim, cfg.ffn_dim
    w = {"token_embd.weight": _normal(gen, (cfg.vocab_size, d), 0.2),
         "position_embd.weight": _normal(gen, (cfg.context_length, d), 0.05)}
    for layer in range(cfg.n_layers):
        p = f"blk.{layer}."
        w[p + "attn_norm.weight"] = _normal(gen, (d,), 0.1, mean=1.0)
        w[p + "attn_norm.bias"] = _normal(gen, (d,), 0.02)
        w[p + "attn_qkv.weight"] = _normal(gen, (3 * d, d), 0.2)
        w[p + "attn_qkv.bias"] = _normal(gen, (3 * d,), 0.02)
        w[p + "attn_output.weight"] = _normal(gen, (d, d), 0.2)
        w[p + "attn_output.bias"] = _normal(gen, (d,), 0.02)
        w[p + "ffn_norm.weight"] = _normal(gen, (d,), 0.1, mean=1.0)
        w[p + "ffn_norm.bias"] = _normal(gen, (d,), 0.02)
        w[p + "ffn_up.weight"] = _normal(gen, (f, d), 0.2)
        w[p + "ffn_up.bias"] = _normal(gen, (f,), 0.02)
        w[p + "ffn_down.weight"] = _normal(gen, (d, f), 0.2)
        w[p + "ffn_down.bias"] = _normal(gen, (d,), 0.02)
    w["output_norm.weight"] = _normal(gen, (d,), 0.1, mean=1.0)
    w["output_norm.bias"] = _normal(gen, (d,), 0.02)
    return w


# ----------------------------------------------------------------------------------------
# GGUF files

def add_hparams(writer: GgufWriter, cfg, name: str, weight_type: str) -> None:
    arch = "llama" if isinstance(cfg, LlamaConfig) else "gpt2"
    writer.add("general.architecture", ValueType.STRING, arch)
    writer.add("general.name", ValueType.STRING, f"servescope-test-{name}")
    writer.add("general.file_type", ValueType.UINT32, FILE_TYPES[weight_type])
    u32 = ValueType.UINT32
    writer.add(f"{arch}.context_length", u32, cfg.context_length)
    writer.add(f"{arch}.embedding_length", u32, cfg.dim)
    writer.add(f"{arch}.block_count", u32, cfg.n_layers)
    writer.add(f"{arch}.feed_forward_length", u32, cfg.ffn_dim)
    writer.add(f"{arch}.attention.head_count", u32, cfg.n_heads)
    if arch == "llama":
        writer.add("llama.attention.head_count_kv", u32, cfg.n_kv_heads)
        writer.add("llama.rope.dimension_count", u32, cfg.head_dim)
        writer.add("llama.attention.layer_norm_rms_epsilon", ValueType.FLOAT32, cfg.rms_eps)
        writer.add("llama.rope.freq_base", ValueType.FLOAT32, cfg.rope_base)
    else:
        writer.add("gpt2.attention.layer_norm_epsilon", ValueType.FLOAT32, cfg.ln_eps)


def tensor_type(array: np.ndarray, weight_type: str) -> GgmlType:
    """The chosen type for 2-D matrices whose rows are whole blocks; F32 for norms, biases."""
    block = 256 if weight_type in K_TYPES else 32
    if array.ndim == 2 and array.shape[1] % block == 0:
        return WEIGHT_TYPES[weight_type]
    return GgmlType.F32


def build_model(cfg, float_weights: dict, name: str, weight_type: str):
    """Returns (writer, stored weights as float64 torch tensors, tokenizer metadata dict)."""
    writer = GgufWriter()
    add_hparams(writer, cfg, name, weight_type)
    if isinstance(cfg, LlamaConfig):
        add_llama_tokenizer(writer)
    else:
        add_gpt2_tokenizer(writer)
    stored = {}
    for tensor_name, array in float_weights.items():
        if tensor_name == "output.weight" and getattr(cfg, "tied_output", False):
            continue
        ggml_type = tensor_type(array, weight_type)
        data = writer.add_tensor(tensor_name, array, ggml_type)
        values = dequantize(data, ggml_type, array.size).reshape(array.shape)
        stored[tensor_name] = torch.from_numpy(values.astype(np.float64))
    metadata = {key: value for key, _, value, _ in writer.metadata}
    return writer, stored, metadata


# ----------------------------------------------------------------------------------------
# Prompts and golden data

def prompt_candidates(metadata: dict, seed: int, bos: bool):
    """Endless deterministic prompts of PROMPT_LEN ids drawn from the ordinary tokens."""
    n_vocab = len(metadata["tokenizer.ggml.tokens"])
    types = metadata.get("tokenizer.ggml.token_type")
    special = {metadata.get(k) for k in ("tokenizer.ggml.bos_token_id",
                                         "tokenizer.ggml.eos_token_id",
                                         "tokenizer.ggml.unknown_token_id",
                                         "tokenizer.ggml.padding_token_id")}
    pool = [i for i in range(n_vocab)
            if i not in special and (types is None or types[i] == 1)]
    rng = np.random.default_rng(seed)
    while True:
        if bos:
            body = rng.choice(pool, PROMPT_LEN - 1).tolist()
            yield [int(metadata["tokenizer.ggml.bos_token_id"])] + [int(i) for i in body]
        else:
            yield [int(i) for i in rng.choice(pool, PROMPT_LEN).tolist()]


def golden(stored: dict, cfg, prompt: list[int]) -> dict:
    logits, greedy, margin = greedy_generate(stored, cfg, prompt, N_GENERATE)
    return {"logits": logits, "greedy_ids": greedy, "min_argmax_margin": margin}


def well_posed(g: dict) -> bool:
    return (g["min_argmax_margin"] >= MIN_MARGIN
            and len(set(g["greedy_ids"])) >= MIN_DISTINCT_GREEDY)


def format_json(name: str, arch: str, weight_type: str, prompt: list[int], g: dict) -> str:
    """JSON with one logits row per line; floats at 7 significant digits."""
    rows = ",\n    ".join("[" + ",".join(f"{float(v):.7g}" for v in row) + "]"
                          for row in g["logits"].tolist())
    head = {"model": f"{name}.gguf", "architecture": arch, "weight_type": weight_type,
            "prompt_ids": prompt, "greedy_ids": g["greedy_ids"],
            "min_argmax_margin": float(f"{g['min_argmax_margin']:.7g}")}
    fields = ",\n  ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in head.items())
    return "{\n  " + fields + ",\n  \"logits\": [\n    " + rows + "\n  ]\n}\n"


def read_back_tensors(path: pathlib.Path) -> dict:
    """Independent parse of the written file: {name: (shape, type, bytes)}.

    Checks that offsets are aligned, so the golden weights are exactly the bytes an engine
    will read.
    """
    _, tensors = read_gguf_raw(path)
    for name, (_, _, _, offset) in tensors.items():
        assert offset % 32 == 0, name
    return {name: (shape, ggml_type, raw) for name, (shape, ggml_type, raw, _) in tensors.items()}


def check_file(path: pathlib.Path, stored: dict, weight_type: str) -> None:
    """The file's tensors dequantise to exactly the weights the golden logits used."""
    tensors = read_back_tensors(path)
    assert sorted(tensors) == sorted(stored), (path, sorted(set(tensors) ^ set(stored)))
    for name, (shape, ggml_type, raw) in tensors.items():
        expected = stored[name]
        assert shape == tuple(expected.shape), (name, shape)
        want_type = WEIGHT_TYPES[weight_type] if len(shape) == 2 else GgmlType.F32
        assert ggml_type == want_type, (name, ggml_type)
        values = dequantize(raw, ggml_type, expected.numel()).astype(np.float64)
        assert np.array_equal(values, expected.numpy().reshape(-1)), name


def check_building_blocks() -> None:
    """The hand-written building blocks agree with independent formulations (float64)."""
    import torch.nn.functional as F
    import reference_models as ref
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(5, 4, 16, generator=gen, dtype=torch.float64)
    w = torch.randn(16, generator=gen, dtype=torch.float64)
    b = torch.randn(16, generator=gen, dtype=torch.float64)
    close = lambda a, c: torch.allclose(a, c, rtol=1e-12, atol=1e-12)  # noqa: E731
    assert close(ref.layer_norm(x, w, b, 1e-5), F.layer_norm(x, (16,), w, b, 1e-5))
    assert close(ref.gelu_tanh(x), F.gelu(x, approximate="tanh"))
    assert close(ref.silu(x), F.silu(x))
    assert close(ref.rms_norm(x, w, 1e-5), x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True)
                                                          + 1e-5) * w)
    # RoPE "normal": each adjacent pair (2i, 2i+1) is a complex number times e^(i*angle).
    positions = torch.arange(5)
    angle = positions[:, None].double() * 10000.0 ** (-torch.arange(0, 16, 2).double() / 16)
    as_complex = torch.view_as_complex(x.reshape(5, 4, 8, 2).contiguous())
    rotated = torch.view_as_real(as_complex * torch.polar(torch.ones_like(angle), angle)[:, None])
    assert close(ref.rope_normal(x, positions, 10000.0), rotated.reshape(5, 4, 16))
    # Attention: position t attends to 0..t only, with softmax(q.k / sqrt(hd)).
    q, k, v = x, x.flip(0), x * 0.5
    out = ref.causal_attention(q, k, v).reshape(5, 4, 16)
    for t in range(5):
        p = torch.softmax(torch.einsum("hd,khd->hk", q[t], k[:t + 1]) / 4.0, dim=-1)
        assert close(out[t], torch.einsum("hk,khd->hd", p, v[:t + 1]))


def self_check(stored: dict, cfg, prompt: list[int], label: str) -> tuple[float, float]:
    """The float32 reference must agree with the float64 one (max |diff| <= 1e-5 x the
    largest |logit|): a sanity check of the reference itself. Returns (max diff, scale)."""
    f64 = forward(stored, cfg, prompt)
    f32 = forward({k: v.float() for k, v in stored.items()}, cfg, prompt).double()
    err = float((f64 - f32).abs().max())
    scale = float(f64.abs().max())
    if err > 1e-5 * max(1.0, scale):
        raise SystemExit(f"{label}: float32 and float64 references differ by {err:.3g}")
    return err, scale


# ----------------------------------------------------------------------------------------

MODELS = [  # (name prefix, arch, config, weight generator, seed, weight types)
    ("llama", "llama", LLAMA, llama_weights, 1234, ["f32", "f16", "q8_0", "q4_0"]),
    ("gpt2", "gpt2", GPT2, gpt2_weights, 1234, ["f32", "f16", "q8_0", "q4_0"]),
    ("llama-tied", "llama", LLAMA_TIED, llama_weights, 1234, ["f32"]),
    # The types added later, a family of their own so that the files above (and their shared
    # prompt) stay as they were: the same float32 weights, their own prompt.
    ("llama", "llama", LLAMA, llama_weights, 1234, ["q4_1", "q5_0", "q5_1", "bf16"]),
    ("llama", "llama", LLAMA_K, llama_weights, 1234, list(K_TYPES)),
]


def main() -> None:
    torch.manual_seed(1234)
    check_building_blocks()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    written = []
    for prefix, arch, cfg, make_weights, seed, types in MODELS:
        float_weights = make_weights(cfg, seed)
        variants = []
        for wt in types:
            name = f"{prefix}-{wt}"
            writer, stored, metadata = build_model(cfg, float_weights, name, wt)
            variants.append((name, wt, writer, stored, metadata))

        # One prompt per family, shared by all its weight types: of N_PROMPT_CANDIDATES
        # deterministic candidates, the well-posed one with the largest smallest margin.
        candidates = prompt_candidates(variants[0][4], seed, bos=(arch == "llama"))
        best = None
        for attempt in range(N_PROMPT_CANDIDATES):
            prompt = next(candidates)
            goldens = [golden(stored, cfg, prompt) for _, _, _, stored, _ in variants]
            margin = min(g["min_argmax_margin"] for g in goldens)
            if all(well_posed(g) for g in goldens) and (best is None or margin > best[0]):
                best = (margin, attempt, prompt, goldens)
        if best is None:
            raise SystemExit(f"{prefix}: no well-posed prompt among {N_PROMPT_CANDIDATES}")
        _, attempt, prompt, goldens = best

        for (name, wt, writer, stored, _), g in zip(variants, goldens):
            err, scale = self_check(stored, cfg, prompt, name)
            gguf_path = OUT_DIR / f"{name}.gguf"
            json_path = OUT_DIR / f"{name}.json"
            writer.write(gguf_path)
            check_file(gguf_path, stored, wt)
            json_path.write_text(format_json(name, arch, wt, prompt, g))
            logits = g["logits"]
            print(f"{name:16s} prompt#{attempt} margin {g['min_argmax_margin']:.4f} "
                  f"logit std {float(logits.std()):.3f} "
                  f"distinct greedy {len(set(g['greedy_ids']))}/{N_GENERATE} "
                  f"f32-vs-f64 max {err:.1e} (max|logit| {scale:.1f})")
            print(f"    greedy {g['greedy_ids']}")
            written += [gguf_path, json_path]

    total = 0
    for path in written:
        data = path.read_bytes()
        total += len(data)
        print(f"{hashlib.sha256(data).hexdigest()[:16]}  {len(data):8d}  "
              f"{path.relative_to(ROOT)}")
    print(f"total {total} bytes in {len(written)} files")
    print("regenerate with: /usr/bin/python3 tools/golden/make_models.py")


if __name__ == "__main__":
    main()
