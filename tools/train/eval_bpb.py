"""Bits per byte of the bundled model on the first 200 stories of tinystories-valid.txt.

    /usr/bin/python3 tools/train/eval_bpb.py [--model assets/models/servescope-stories.gguf]
    /usr/bin/python3 tools/train/eval_bpb.py --ckpt build/train/ckpt.pt   # a checkpoint

The measure (the model card's): each story is encoded as BOS + its tokens, truncated to the model's
context length; the negative log-likelihood of every next token after BOS is summed over
all stories, divided by ln 2 and by the UTF-8 bytes of the decoded (truncated) stories.
karpathy's llama2.c stories260K scores 0.832 on exactly this measure.

With --model the logits come from tools/golden/reference_models.py's llama_forward on the
weights stored in the GGUF (float32 by default, --float64 for the exact reference), so the
number is the shipped file's. The tokenizer is the one the GGUF was exported with.
"""
import argparse
import math
import pathlib
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
from reference_models import llama_forward  # noqa: E402


def story_sequences(sp, n_stories: int, ctx: int):
    """[(ids with BOS, truncated to ctx)], total UTF-8 bytes of the decoded stories."""
    seqs, total_bytes = [], 0
    for toks in sp.encode(common.valid_stories()[:n_stories]):
        seq = [sp.bos_id()] + toks[:ctx - 1]
        total_bytes += len(sp.decode(seq[1:]).encode("utf-8"))
        seqs.append(seq)
    return seqs, total_bytes


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=pathlib.Path, default=common.GGUF_PATH)
    p.add_argument("--ckpt", type=pathlib.Path, help="evaluate a training checkpoint instead")
    p.add_argument("--stories", type=int, default=200)
    p.add_argument("--float64", action="store_true")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--corpus-dir", type=pathlib.Path,
                   help="folder of the TinyStories text files (default: $SERVESCOPE_CORPUS_DIR)")
    a = p.parse_args()
    common.CORPUS_DIR = a.corpus_dir
    torch.set_num_threads(a.threads)
    sp = common.load_tokenizer()
    dtype = torch.float64 if a.float64 else torch.float32

    if a.ckpt:
        state = torch.load(a.ckpt, map_location="cpu")
        margs = common.ModelArgs(**state["model_args"])
        model = common.Llama(margs)
        model.load_state_dict(state["model"])
        model.eval()
        ctx = margs.context_length
        source = f"{a.ckpt} (step {state['step']})"

        def logits_of(ids):
            with torch.no_grad():
                return model(torch.tensor([ids]))[0]
    else:
        cfg, weights, md = common.load_reference(a.model, dtype)
        if md["tokenizer.ggml.tokens"] != [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]:
            sys.exit(f"{a.model}: its vocabulary differs from {common.TOKENIZER_PATH}")
        ctx = cfg.context_length
        source = str(a.model)

        def logits_of(ids):
            with torch.no_grad():
                return llama_forward(weights, cfg, ids)

    seqs, total_bytes = story_sequences(sp, a.stories, ctx)
    t0 = time.time()
    nll, n_tokens = 0.0, 0
    for seq in seqs:
        logits = logits_of(seq).double()
        logp = torch.log_softmax(logits[:-1], dim=-1)
        nll -= float(logp[torch.arange(len(seq) - 1), torch.tensor(seq[1:])].sum())
        n_tokens += len(seq) - 1
    bpb = nll / math.log(2) / total_bytes
    print(f"{source}: {a.stories} stories, {n_tokens:,} predicted tokens, {total_bytes:,} bytes, "
          f"context {ctx}")
    print(f"mean NLL {nll / n_tokens:.4f} nats/token, bits/byte {bpb:.4f} "
          f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
