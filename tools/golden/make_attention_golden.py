"""Golden attention probabilities of the F32 test models, for the attention-capture tests.

    /usr/bin/python3 tools/golden/make_attention_golden.py

reads tests/data/models/{llama,gpt2}-f32.gguf and the golden prompt of their .json, runs the
float64 PyTorch reference (reference_models.py) on the prompt and writes
tests/data/models/<name>.attention.json:

    {"model": "llama-f32.gguf", "prompt_ids": [...],
     "kv_types": {"f32": LAYERS, "f16": LAYERS, "q8_0": LAYERS}}
    LAYERS = [ [ [row 0: 1 weight], [row 1: 2 weights], ... ] per head ] per layer

Row i of a head holds the softmax probabilities of query position i over positions 0..i
(after the causal mask; GQA heads share their KV head's keys). Under "f16" and "q8_0" every
token's keys and values (each a row of n_kv_heads * head_dim) are first rounded as a KV cache
of that type stores them (tools/common/gguf_writer.py's GGML encoders). 7 significant digits.
Deterministic: re-running writes byte-identical files.
"""
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

from gguf_reader import read_gguf  # noqa: E402
from gguf_writer import GgmlType, dequantize, encode_tensor  # noqa: E402
from make_models import GPT2, LLAMA  # noqa: E402
from reference_models import forward  # noqa: E402

MODELS = ROOT / "tests" / "data" / "models"
KV_TYPES = {"f32": None, "f16": GgmlType.F16, "q8_0": GgmlType.Q8_0}


def kv_rounding(ggml_type):
    """keys or values [T, kv_heads, hd] -> the same, as a KV cache of ggml_type returns them."""
    if ggml_type is None:
        return None

    def round_rows(x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(x.shape[0], -1).numpy().astype(np.float32)
        stored = dequantize(encode_tensor(rows, ggml_type), ggml_type, rows.size)
        return torch.from_numpy(stored.astype(np.float64)).reshape(x.shape)
    return round_rows


def probabilities(weights: dict, cfg, prompt: list[int], ggml_type) -> list:
    record: list = []
    forward(weights, cfg, prompt, record, kv_rounding(ggml_type))
    assert len(record) == cfg.n_layers
    layers = []
    for probs in record:  # [H, T, T]
        assert torch.allclose(probs.sum(dim=-1), torch.ones(1, dtype=probs.dtype))
        layers.append([[[float(f"{p:.7g}") for p in head[i, :i + 1].tolist()]
                        for i in range(len(prompt))] for head in probs])
    return layers


def attention_golden(name: str, cfg) -> dict:
    _, tensors = read_gguf(MODELS / f"{name}.gguf")
    weights = {k: torch.from_numpy(v).double() for k, v in tensors.items()}
    prompt = json.loads((MODELS / f"{name}.json").read_text())["prompt_ids"]
    return {"model": f"{name}.gguf", "prompt_ids": prompt,
            "kv_types": {label: probabilities(weights, cfg, prompt, t)
                         for label, t in KV_TYPES.items()}}


def main() -> None:
    for name, cfg in (("llama-f32", LLAMA), ("gpt2-f32", GPT2)):
        path = MODELS / f"{name}.attention.json"
        path.write_text(json.dumps(attention_golden(name, cfg), separators=(",", ":")) + "\n")
        print(f"{path.relative_to(ROOT)}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
