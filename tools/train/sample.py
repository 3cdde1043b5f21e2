"""Greedy and temperature-0.8 continuations from the exported GGUF model.

    /usr/bin/python3 tools/train/sample.py [--model assets/models/servescope-stories.gguf]
                                           [--max-tokens 120] [--seed 42]

The logits come from tools/golden/reference_models.py's llama_forward on the weights read
from the GGUF file (the full forward is re-run for every new token, no cache), so the text is
what the shipped file says. Prompts: BOS + the SentencePiece encoding of the prompt;
generation stops at EOS or after --max-tokens tokens. Sampling draws from
softmax(logits / 0.8) with a seeded torch.Generator (one per prompt), so output is repeatable.
"""
import argparse
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
from reference_models import llama_forward  # noqa: E402

PROMPTS = ["Once upon a time", "Lily and Ben", "The little dog"]


def generate(weights, cfg, sp, prompt: str, max_tokens: int, temperature: float, seed: int) -> str:
    ids = [sp.bos_id()] + sp.encode(prompt)
    n_prompt = len(ids)
    gen = torch.Generator().manual_seed(seed)
    while len(ids) - n_prompt < max_tokens and len(ids) < cfg.context_length:
        with torch.no_grad():
            logits = llama_forward(weights, cfg, ids)[-1].double()
        if temperature == 0.0:
            nxt = int(torch.argmax(logits))
        else:
            probs = torch.softmax(logits / temperature, dim=-1)
            nxt = int(torch.multinomial(probs, 1, generator=gen))
        if nxt == sp.eos_id():
            break
        ids.append(nxt)
    return sp.decode(ids[1:])


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=pathlib.Path, default=common.GGUF_PATH)
    p.add_argument("--max-tokens", type=int, default=120)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--prompt", action="append", help="default: the three model-card prompts")
    a = p.parse_args()
    torch.set_num_threads(1)
    cfg, weights, _ = common.load_reference(a.model, torch.float32)
    sp = common.load_tokenizer()
    for prompt in a.prompt or PROMPTS:
        for label, temperature in (("greedy", 0.0), ("temperature 0.8", 0.8)):
            text = generate(weights, cfg, sp, prompt, a.max_tokens, temperature, a.seed)
            print(f"### {prompt!r}, {label}\n\n{text}\n", flush=True)


if __name__ == "__main__":
    main()
