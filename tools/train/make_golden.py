"""Golden data for the bundled model: reference logits the engine must reproduce.

    /usr/bin/python3 tools/train/make_golden.py [--model assets/models/servescope-stories.gguf]

Writes tests/data/default_model/golden.json. For each prompt (BOS + the SentencePiece
encoding of its text, add_space_prefix as the GGUF says), tools/golden/reference_models.py's
llama_forward computes in float64, on the weights exactly as stored in the GGUF:
  - "logits": one row of vocab_size logits per prompt position (7 significant digits);
  - "greedy_ids": a 20-token greedy continuation (full forward re-run per token, no cache;
    generation does not stop at EOS);
  - "min_argmax_margin": the smallest top-1 minus top-2 logit gap over the prompt positions
    and the greedy steps (compare argmaxes only where an engine's error is below half this).
"model_sha256" identifies the GGUF the data belongs to: regenerate when the model changes.
"""
import argparse
import hashlib
import json
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
from reference_models import greedy_generate  # noqa: E402

PROMPTS = ["Once upon a time", "Lily and Ben"]
N_GENERATE = 20
OUT = common.ROOT / "tests" / "data" / "default_model" / "golden.json"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=pathlib.Path, default=common.GGUF_PATH)
    p.add_argument("--out", type=pathlib.Path, default=OUT)
    a = p.parse_args()
    torch.set_num_threads(1)
    cfg, weights, md = common.load_reference(a.model, torch.float64)
    sp = common.load_tokenizer()
    assert md["tokenizer.ggml.tokens"] == [sp.IdToPiece(i) for i in range(sp.GetPieceSize())]

    cases = []
    for text in PROMPTS:
        ids = [sp.bos_id()] + sp.encode(text)
        logits, greedy, margin = greedy_generate(weights, cfg, ids, N_GENERATE)
        cases.append({"prompt": text, "prompt_ids": ids, "greedy_ids": greedy,
                      "greedy_text": sp.decode(ids[1:] + greedy),
                      "min_argmax_margin": float(f"{margin:.7g}"), "logits": logits})
        print(f"{text!r}: {len(ids)} ids {ids}, margin {margin:.4f}, greedy -> "
              f"{sp.decode(ids[1:] + greedy)!r}")

    head = {"model": a.model.name,
            "model_sha256": hashlib.sha256(a.model.read_bytes()).hexdigest(),
            "architecture": "llama", "weight_type": "f32",
            "computed_with": "tools/golden/reference_models.py llama_forward, float64",
            "vocab_size": cfg.vocab_size}
    parts = [f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in head.items()]
    case_texts = []
    for c in cases:
        fields = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in c.items() if k != "logits"]
        rows = ",\n      ".join("[" + ",".join(f"{float(v):.7g}" for v in row) + "]"
                                for row in c["logits"].tolist())
        case_texts.append("    {\n      " + ",\n      ".join(fields) +
                          ",\n      \"logits\": [\n      " + rows + "\n      ]\n    }")
    text = "{\n" + ",\n".join(parts) + ",\n  \"cases\": [\n" + ",\n".join(case_texts) + "\n  ]\n}\n"
    json.loads(text)  # well-formed
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(text)
    print(f"wrote {a.out}: {len(text):,} bytes")


if __name__ == "__main__":
    main()
