"""Export a training checkpoint to the bundled GGUF model.

    /usr/bin/python3 tools/train/export.py [--ckpt build/train/ckpt.pt]
                                           [--out assets/models/servescope-stories.gguf]

Writes llama metadata (llama.cpp key names), the tokenizer (tokenizer.ggml.*, from
tools/train/servescope-stories.spm.model, same keys as tools/golden/tokenizer_vocab.py) and
every weight in F32 (F16 if the F32 file would exceed 25 MB, or with --f16). Then reads the
file back and checks that tools/golden/reference_models.py's llama_forward on the stored
weights reproduces the training model's logits.
"""
import argparse
import pathlib
import sys

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
from common import Llama, ModelArgs  # noqa: E402
from gguf_writer import GgmlType, GgufWriter, ValueType  # noqa: E402
from reference_models import llama_forward  # noqa: E402
import tokenizer_vocab  # noqa: E402

MAX_BYTES = 25 * 1000 * 1000
MODEL_NAME = "servescope-stories"


def spm_vocabulary(sp) -> dict:
    """The tokenizer_vocab.add_tokenizer() dict for a SentencePiece model."""
    n = sp.GetPieceSize()
    return {
        "model": "llama",
        "tokens": [sp.IdToPiece(i) for i in range(n)],
        "scores": [float(sp.GetScore(i)) for i in range(n)],
        "token_types": [tokenizer_vocab._spm_token_type(sp, i) for i in range(n)],
        "merges": [],
        "bos_id": sp.bos_id(),
        "eos_id": sp.eos_id(),
        "unknown_id": sp.unk_id(),
        "add_bos": True,
        "add_space_prefix": True,
    }


def build_writer(margs: ModelArgs, weights: dict, sp, f16: bool, description: str) -> GgufWriter:
    w = GgufWriter()
    u32, f32 = ValueType.UINT32, ValueType.FLOAT32
    w.add("general.architecture", ValueType.STRING, "llama")
    w.add("general.name", ValueType.STRING, MODEL_NAME)
    w.add("general.description", ValueType.STRING, description)
    w.add("general.license", ValueType.STRING, "trained on TinyStories (CDLA-Sharing-1.0)")
    w.add("general.file_type", u32, 1 if f16 else 0)
    w.add("llama.vocab_size", u32, margs.vocab_size)
    w.add("llama.context_length", u32, margs.context_length)
    w.add("llama.embedding_length", u32, margs.dim)
    w.add("llama.block_count", u32, margs.n_layers)
    w.add("llama.feed_forward_length", u32, margs.ffn_dim)
    w.add("llama.rope.dimension_count", u32, margs.head_dim)
    w.add("llama.attention.head_count", u32, margs.n_heads)
    w.add("llama.attention.head_count_kv", u32, margs.n_kv_heads)
    w.add("llama.attention.layer_norm_rms_epsilon", f32, margs.rms_eps)
    w.add("llama.rope.freq_base", f32, margs.rope_base)
    tokenizer_vocab.add_tokenizer(w, spm_vocabulary(sp))
    for name, array in weights.items():
        kind = GgmlType.F16 if (f16 and array.ndim == 2) else GgmlType.F32
        w.add_tensor(name, array, kind)
    return w


def check_against_training_forward(model: Llama, path: pathlib.Path, sp) -> float:
    """Max |logit difference| between the training forward (float32) and the reference
    forward on the weights read back from the file (float64), on a short story prompt."""
    cfg, weights, _ = common.load_reference(path)
    ids = [sp.bos_id()] + sp.encode("Once upon a time, there was a little girl named Lily.")
    ref = llama_forward(weights, cfg, ids)
    with torch.no_grad():
        ours = model(torch.tensor([ids]))[0].double()
    return float((ref - ours).abs().max()), float(ref.abs().max())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--ckpt", type=pathlib.Path, default=common.DEFAULT_OUT_DIR / "ckpt.pt")
    p.add_argument("--out", type=pathlib.Path, default=common.GGUF_PATH)
    p.add_argument("--tokenizer", type=pathlib.Path, default=common.TOKENIZER_PATH)
    p.add_argument("--f16", action="store_true", help="store matrices as F16")
    a = p.parse_args()
    torch.set_num_threads(1)

    state = torch.load(a.ckpt, map_location="cpu")
    margs = ModelArgs(**state["model_args"])
    model = Llama(margs)
    model.load_state_dict(state["model"])
    model.eval()
    sp = common.load_tokenizer(a.tokenizer)
    assert sp.GetPieceSize() == margs.vocab_size
    weights = model.gguf_tensors()
    n_params = sum(v.size for v in weights.values())
    hist = state.get("history") or [{}]
    description = (f"ServeScope default model: Llama-architecture story model, {n_params:,} parameters, "
                   f"trained {state['step']} steps ({state['train_seconds'] / 60:.0f} CPU-minutes) on TinyStories; "
                   f"validation bits/byte {hist[-1].get('val_bpb', float('nan')):.4f}")
    f16 = a.f16 or 4 * n_params > MAX_BYTES
    writer = build_writer(margs, weights, sp, f16, description)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    writer.write(a.out)
    size = a.out.stat().st_size
    print(f"wrote {a.out}: {size:,} bytes, {'F16' if f16 else 'F32'}, {n_params:,} parameters, "
          f"step {state['step']}")
    diff, scale = check_against_training_forward(model, a.out, sp)
    print(f"reference forward on the file vs training forward: max |diff| {diff:.2e} "
          f"(max |logit| {scale:.1f})")
    if diff > (5e-2 if f16 else 1e-3) * max(1.0, scale):
        sys.exit("export check failed: the reference forward does not reproduce the model")


if __name__ == "__main__":
    main()
