"""Reference data for the quantisation lab (engine/eval), independent of the C++ engine.

    /usr/bin/python3 tools/golden/make_quant_golden.py

writes tests/data/quant/:
  blocks.f32, blocks.q8_0, blocks.q4_0   edge-case blocks (float32 little-endian) and their
                                         encodings by tools/common/gguf_writer.py's numpy
                                         GGML quantisers
  tensor_error.json                      per-tensor error statistics of llama-f32.gguf
                                         quantised to q8_0 and q4_0 (numpy, float64 sums)
  perplexity.json                        chunked perplexity of the test models on a
                                         deterministic token stream (PyTorch float64 reference
                                         forward), and KL / top-1 agreement of the q8_0 and
                                         q4_0 files against the f32 file
Deterministic: re-running produces byte-identical files.
"""
import json
import pathlib
import sys

import numpy as np
import torch

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (HERE, ROOT / "tools" / "common"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

from gguf_writer import GgmlType, dequantize, encode_tensor  # noqa: E402
from make_models import GPT2, LLAMA, read_back_tensors  # noqa: E402
from reference_models import forward  # noqa: E402

MODELS_DIR = ROOT / "tests" / "data" / "models"
OUT_DIR = ROOT / "tests" / "data" / "quant"
QK = 32

# The engine's default histogram edges (engine/eval/tensor_error.h): symmetric half-decades.
MAGNITUDES = [1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5]
BIN_EDGES = [-m for m in MAGNITUDES] + list(reversed(MAGNITUDES))

TEXT_TOKENS = 300  # context 128: chunks of BOS + 127, 127 and 46 tokens
BOS = {"llama": 1, "gpt2": None}  # gpt2 test vocabulary: BOS = end of text, looked up below


# ----------------------------------------------------------------------------------------
# Edge-case blocks

def edge_case_blocks() -> np.ndarray:
    rng = np.random.default_rng(6)
    blocks = [
        np.zeros(QK),                                        # all zero: scale 0, quants 0/8
        np.where(np.arange(QK) == 5, 1e4, 0.01),             # one huge value
        np.where(np.arange(QK) == 17, -3.0, rng.uniform(-1, 1, QK)),  # negative maximum
        -np.abs(rng.normal(0, 1, QK)),                       # all negative
        np.full(QK, 0.25),                                   # constant
        np.linspace(-1, 1, QK),                              # ties of x/d near .5
        np.where(np.arange(QK) % 2 == 0, 2.0, -2.0),         # +-max, first is positive
        np.where(np.arange(QK) % 2 == 0, -2.0, 2.0),         # +-max, first is negative
        rng.normal(0, 1e-6, QK),                             # tiny: subnormal fp16 scale
        rng.normal(0, 0.02, QK),                             # typical weights
        rng.normal(0, 0.3, QK),
    ]
    return np.concatenate(blocks).astype(np.float32)


# ----------------------------------------------------------------------------------------
# Tensor error statistics

def tensor_error(name: str, original: np.ndarray, quantised: np.ndarray, ggml_type: str) -> dict:
    x = original.astype(np.float64)
    e = quantised.astype(np.float64) - x
    sx, se = float(np.sum(x * x)), float(np.sum(e * e))
    counts = np.zeros(len(BIN_EDGES) + 1, dtype=np.int64)
    np.add.at(counts, np.searchsorted(BIN_EDGES, e, side="right"), 1)
    return {"name": name, "type": ggml_type, "elements": int(x.size),
            "rmse": float(np.sqrt(se / x.size)), "max_abs_error": float(np.abs(e).max()),
            "relative_error": float(np.sqrt(se / sx)) if se > 0 else 0.0,
            "sqnr_db": float(10 * np.log10(sx / se)) if se > 0 else "inf",
            "histogram": counts.tolist()}


def error_report(path: pathlib.Path) -> dict:
    tensors = read_back_tensors(path)
    report = {"model": path.name, "bin_edges": BIN_EDGES, "types": {}}
    for label, ggml_type in (("q8_0", GgmlType.Q8_0), ("q4_0", GgmlType.Q4_0)):
        rows = []
        for name, (shape, stored_type, raw) in tensors.items():
            assert stored_type == GgmlType.F32
            values = dequantize(raw, GgmlType.F32, int(np.prod(shape))).reshape(shape)
            target = ggml_type if len(shape) == 2 and shape[-1] % QK == 0 else GgmlType.F32
            decoded = dequantize(encode_tensor(values, target), target, values.size)
            rows.append(tensor_error(name, values.reshape(-1), decoded, target.name))
        report["types"][label] = rows
    return report


# ----------------------------------------------------------------------------------------
# Perplexity and KL

def stored_weights(path: pathlib.Path) -> dict:
    out = {}
    for name, (shape, ggml_type, raw) in read_back_tensors(path).items():
        values = dequantize(raw, ggml_type, int(np.prod(shape))).reshape(shape)
        out[name] = torch.from_numpy(values.astype(np.float64))
    return out


def text_ids(seed: int) -> list[int]:
    """Ordinary token ids (3..511 skips the llama test vocabulary's control tokens)."""
    rng = np.random.default_rng(seed)
    return [int(i) for i in rng.integers(3, 511, TEXT_TOKENS)]


def chunks(ids: list[int], context: int, bos) -> list[list[int]]:
    per_chunk = context - 1 if bos is not None else context
    out = []
    for start in range(0, len(ids), per_chunk):
        chunk = ([bos] if bos is not None else []) + ids[start:start + per_chunk]
        if len(chunk) >= 2:
            out.append(chunk)
    return out


def log_probs_of(weights: dict, cfg, chunk_list) -> list[torch.Tensor]:
    return [torch.log_softmax(forward(weights, cfg, c), dim=-1)[:-1] for c in chunk_list]


def percentile(values: np.ndarray, p: float) -> float:
    return float(np.percentile(values, p))  # linear interpolation, as the engine


def perplexity_case(family: str, cfg, bos) -> dict:
    ids = text_ids(seed=42)
    chunk_list = chunks(ids, cfg.context_length, bos)
    base = log_probs_of(stored_weights(MODELS_DIR / f"{family}-f32.gguf"), cfg, chunk_list)
    targets = [torch.tensor(c[1:]) for c in chunk_list]
    nll = torch.cat([-lp[torch.arange(len(t)), t] for lp, t in zip(base, targets)])
    case = {"model": f"{family}-f32.gguf", "context_length": cfg.context_length,
            "bos_id": bos if bos is not None else -1, "text_ids": ids,
            "positions": int(nll.numel()), "mean_nll": float(nll.mean()),
            "perplexity": float(torch.exp(nll.mean())), "variants": {}}
    for wt in ("q8_0", "q4_0"):
        variant = log_probs_of(stored_weights(MODELS_DIR / f"{family}-{wt}.gguf"), cfg, chunk_list)
        kl = torch.cat([(b.exp() * (b - v)).sum(-1) for b, v in zip(base, variant)]).numpy()
        agree = torch.cat([b.argmax(-1) == v.argmax(-1) for b, v in zip(base, variant)])
        vnll = torch.cat([-lp[torch.arange(len(t)), t] for lp, t in zip(variant, targets)])
        case["variants"][wt] = {"model": f"{family}-{wt}.gguf",
                                "perplexity": float(torch.exp(vnll.mean())),
                                "mean_kl": float(kl.mean()), "p99_kl": percentile(kl, 99),
                                "max_kl": float(kl.max()),
                                "top1_agreement": float(agree.double().mean())}
    return case


def main() -> None:
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    blocks = edge_case_blocks()
    (OUT_DIR / "blocks.f32").write_bytes(blocks.astype("<f4").tobytes())
    (OUT_DIR / "blocks.q8_0").write_bytes(encode_tensor(blocks, GgmlType.Q8_0))
    (OUT_DIR / "blocks.q4_0").write_bytes(encode_tensor(blocks, GgmlType.Q4_0))

    report = error_report(MODELS_DIR / "llama-f32.gguf")
    (OUT_DIR / "tensor_error.json").write_text(json.dumps(report, indent=1) + "\n")

    gpt2_bos = 511  # tokenizer_vocab's gpt2 end-of-text id, checked below
    from tokenizer_vocab import gpt2_vocabulary  # noqa: E402
    assert gpt2_vocabulary()["bos_id"] == gpt2_bos
    cases = [perplexity_case("llama", LLAMA, BOS["llama"]), perplexity_case("gpt2", GPT2, gpt2_bos)]
    (OUT_DIR / "perplexity.json").write_text(json.dumps({"cases": cases}, indent=1) + "\n")
    for c in cases:
        print(c["model"], "ppl", round(c["perplexity"], 4),
              {k: (round(v["mean_kl"], 6), round(v["top1_agreement"], 4))
               for k, v in c["variants"].items()})


if __name__ == "__main__":
    main()
