"""Train ServeScope's default model: a small Llama-architecture story model on TinyStories.

    /usr/bin/python3 tools/train/train.py --max-minutes 100            # train (or continue)
    /usr/bin/python3 tools/train/train.py --resume --max-minutes 30    # continue a run
    /usr/bin/python3 tools/train/train.py --bench-steps 20 --dim 192   # tokens/s of a shape

Steps: (1) a SentencePiece BPE tokenizer (byte fallback, identity normalisation) is trained
on a sample of the training stories unless tools/train/servescope-stories.spm.model exists;
(2) the training stories are encoded once (BOS + story + EOS, concatenated) and cached in
the output folder; (3) AdamW on random windows of context+1 tokens that each start at a
story's BOS; learning rate: linear warm-up, constant, then a linear cool-down over the last
--cooldown fraction of --max-steps (so a run can be shortened on resume without a jump).
Every --eval-every steps the validation loss and bits/byte are measured exactly as
eval_bpb.py does (first --eval-stories stories of tinystories-valid.txt, BOS, truncated to
the context). Checkpoints (model, optimiser, step, RNG state) are written atomically every
--ckpt-minutes and when the run stops (--max-steps reached or --max-minutes spent).
Output folder (git-ignored): build/train/ by default.
"""
import argparse
import dataclasses
import math
import pathlib
import sys
import time

import numpy as np
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import common  # noqa: E402
from common import Llama, ModelArgs  # noqa: E402


def parse_args(argv=None):
    """Command-line options; with --resume, options not given on the command line take the
    values the checkpointed run used (see restore_args)."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out-dir", type=pathlib.Path, default=common.DEFAULT_OUT_DIR)
    p.add_argument("--resume", action="store_true", help="continue from OUT_DIR/ckpt.pt")
    p.add_argument("--corpus-dir", type=pathlib.Path,
                   help="folder of the TinyStories text files (default: $SERVESCOPE_CORPUS_DIR)")
    # model shape
    p.add_argument("--vocab", type=int, default=2048)
    p.add_argument("--dim", type=int, default=256)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--ffn", type=int, default=704)
    p.add_argument("--ctx", type=int, default=256)
    # optimisation
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--cooldown", type=float, default=0.25, help="fraction of max-steps")
    p.add_argument("--cooldown-minutes", type=float, default=0.0,
                   help="with --max-minutes: start the cool-down at the latest this many minutes "
                        "before the time budget ends, and reach --min-lr when it ends")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--max-steps", type=int, default=3000)
    p.add_argument("--max-minutes", type=float, default=0.0, help="stop (with a checkpoint) after this many minutes of this invocation; 0: no limit")
    # bookkeeping
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--eval-stories", type=int, default=200)
    p.add_argument("--ckpt-minutes", type=float, default=4.0)
    p.add_argument("--log-every", type=int, default=20)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--tokenizer-stories", type=int, default=4000)
    p.add_argument("--bench-steps", type=int, default=0, help="only measure tokens/s on random ids")
    args = p.parse_args(argv)
    common.CORPUS_DIR = args.corpus_dir
    given = sys.argv[1:] if argv is None else argv
    args.explicit = {action.dest for action in p._actions
                     if any(arg == o or arg.startswith(o + "=")
                            for arg in given for o in action.option_strings)}
    return args


def restore_args(a, saved: dict):
    """Options of the checkpointed run for everything not given on this command line."""
    for key, value in saved.items():
        if key not in a.explicit and key not in ("resume", "explicit", "out_dir", "max_minutes"):
            setattr(a, key, value)


def lr_at(step: int, a) -> float:
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    cool_start = int(a.max_steps * (1.0 - a.cooldown))
    if step < cool_start:
        return a.lr
    frac = min(1.0, (step - cool_start) / max(1, a.max_steps - cool_start))
    return a.lr + (a.min_lr - a.lr) * frac


def make_optimizer(model, a):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}],
                             lr=a.lr, betas=(0.9, 0.95), eps=1e-8)


# ----------------------------------------------------------------------------- data

def encode_training_data(sp, out_dir: pathlib.Path):
    """tokens (int16 stream of BOS story EOS ...) and story start offsets, cached."""
    cache = out_dir / f"train-tokens-v{sp.GetPieceSize()}.npz"
    if cache.exists():
        z = np.load(cache)
        return z["tokens"], z["starts"]
    stories = common.train_stories()
    ids = sp.encode(stories)
    bos, eos = sp.bos_id(), sp.eos_id()
    tokens, starts, n = [], [], 0
    for s in ids:
        starts.append(n)
        tokens.extend([bos] + s + [eos])
        n += len(s) + 2
    tokens = np.array(tokens, dtype=np.int16)
    starts = np.array(starts, dtype=np.int64)
    np.savez(cache, tokens=tokens, starts=starts)
    return tokens, starts


def valid_batches(sp, n_stories: int, ctx: int, batch: int = 16):
    """The first n_stories validation stories as (ids, targets, bytes) batches: BOS + tokens
    truncated to ctx; targets -1 on padding; bytes = UTF-8 bytes of the decoded tokens."""
    stories = common.valid_stories()[:n_stories]
    seqs, total_bytes = [], 0
    for toks in sp.encode(stories):
        seq = [sp.bos_id()] + toks[:ctx - 1]
        total_bytes += len(sp.decode(seq[1:]).encode("utf-8"))
        seqs.append(seq)
    out = []
    for i in range(0, len(seqs), batch):
        chunk = seqs[i:i + batch]
        T = max(len(s) for s in chunk)
        ids = torch.zeros(len(chunk), T, dtype=torch.long)
        tgt = torch.full((len(chunk), T), -1, dtype=torch.long)
        for j, s in enumerate(chunk):
            ids[j, :len(s)] = torch.tensor(s)
            tgt[j, :len(s) - 1] = torch.tensor(s[1:])
        out.append((ids, tgt))
    return out, total_bytes


@torch.no_grad()
def evaluate(model, batches, total_bytes):
    model.eval()
    nll, n = 0.0, 0
    for ids, tgt in batches:
        logits = model(ids)
        nll += float(torch.nn.functional.cross_entropy(
            logits.view(-1, logits.size(-1)), tgt.view(-1), ignore_index=-1, reduction="sum"))
        n += int((tgt >= 0).sum())
    model.train()
    return nll / n, nll / math.log(2) / total_bytes


def get_batch(tokens, starts, a, gen: np.random.Generator):
    limit = len(tokens) - (a.ctx + 1)
    valid = starts[starts <= limit]
    picks = valid[gen.integers(0, len(valid), size=a.batch)]
    x = np.stack([tokens[s:s + a.ctx + 1] for s in picks]).astype(np.int64)
    x = torch.from_numpy(x)
    return x[:, :-1], x[:, 1:]


# ----------------------------------------------------------------------------- main

def save_checkpoint(path: pathlib.Path, state: dict):
    tmp = path.with_suffix(".tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def main(argv=None):
    a = parse_args(argv)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    a.out_dir.mkdir(parents=True, exist_ok=True)
    ckpt_path = a.out_dir / "ckpt.pt"

    if a.bench_steps:
        margs = ModelArgs(a.vocab, a.dim, a.layers, a.heads, a.kv_heads, a.ffn, a.ctx)
        model = Llama(margs)
        opt = make_optimizer(model, a)
        print(f"bench: {common.count_params(model):,} params, {margs}", flush=True)
        for step in range(a.bench_steps + 2):
            if step == 2:
                t0 = time.time()
            x = torch.randint(0, a.vocab, (a.batch, a.ctx + 1))
            _, loss = model(x[:, :-1], x[:, 1:])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        dt = time.time() - t0
        print(f"bench: {a.bench_steps * a.batch * a.ctx / dt:,.0f} tokens/s "
              f"({dt / a.bench_steps:.3f} s/step, threads {a.threads})", flush=True)
        return

    state = None
    if a.resume:
        if not ckpt_path.exists():
            sys.exit(f"{ckpt_path}: no checkpoint to resume from")
        state = torch.load(ckpt_path)
        margs = ModelArgs(**state["model_args"])
        restore_args(a, state.get("train_args", {}))
        print(f"resuming from {ckpt_path} at step {state['step']}", flush=True)
    else:
        margs = ModelArgs(a.vocab, a.dim, a.layers, a.heads, a.kv_heads, a.ffn, a.ctx)
        if ckpt_path.exists():
            sys.exit(f"{ckpt_path} exists: pass --resume, or remove it to start over")
    a.ctx, a.vocab = margs.context_length, margs.vocab_size

    tok_path = common.TOKENIZER_PATH
    if not tok_path.exists():
        print(f"training tokenizer ({margs.vocab_size} pieces) -> {tok_path}", flush=True)
        common.train_tokenizer(common.train_stories(), margs.vocab_size, tok_path,
                               sample_stories=a.tokenizer_stories)
    sp = common.load_tokenizer(tok_path)
    if sp.GetPieceSize() != margs.vocab_size:
        sys.exit(f"{tok_path} has {sp.GetPieceSize()} pieces, the model {margs.vocab_size}")
    tokens, starts = encode_training_data(sp, a.out_dir)
    text_bytes = sum(len(s.encode()) + 1 for s in common.train_stories())
    print(f"training data: {len(starts):,} stories, {len(tokens):,} tokens "
          f"({text_bytes / len(tokens):.2f} bytes/token)", flush=True)
    vbatches, vbytes = valid_batches(sp, a.eval_stories, margs.context_length)

    model = Llama(margs)
    opt = make_optimizer(model, a)
    gen = np.random.default_rng(a.seed)
    step, train_seconds, best_bpb = 0, 0.0, None
    history = []
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.bit_generator.state = state["numpy_rng"]
        torch.set_rng_state(state["torch_rng"])
        step, train_seconds = state["step"], state["train_seconds"]
        history = state.get("history", [])
    print(f"model: {common.count_params(model):,} parameters, {margs}", flush=True)
    print(f"steps {step} -> {a.max_steps}, batch {a.batch} x {margs.context_length} tokens, "
          f"lr {a.lr} (cool-down from step {int(a.max_steps * (1 - a.cooldown))}), threads {a.threads}",
          flush=True)

    def checkpoint(reason):
        save_checkpoint(ckpt_path, {
            "model": model.state_dict(), "optimizer": opt.state_dict(),
            "model_args": dataclasses.asdict(margs),
            "step": step, "train_seconds": train_seconds, "history": history,
            "numpy_rng": gen.bit_generator.state, "torch_rng": torch.get_rng_state(),
            "train_args": {k: v for k, v in vars(a).items() if k not in ("out_dir", "explicit")}})
        print(f"checkpoint ({reason}): step {step}, {train_seconds / 60:.1f} min trained -> {ckpt_path}",
              flush=True)

    def run_eval():
        t = time.time()
        vloss, vbpb = evaluate(model, vbatches, vbytes)
        history.append({"step": step, "train_minutes": round(train_seconds / 60, 2),
                        "val_loss": round(vloss, 4), "val_bpb": round(vbpb, 4)})
        print(f"eval step {step}: val loss {vloss:.4f}, val bits/byte {vbpb:.4f} "
              f"({time.time() - t:.0f} s)", flush=True)

    start = time.time()
    last_ckpt = time.time()
    tick, tick_tokens = time.time(), 0
    model.train()
    last_step_end, step_wall = time.time(), None
    while step < a.max_steps:
        if a.max_minutes and time.time() - start > a.max_minutes * 60:
            print("time budget spent", flush=True)
            break
        t_step = time.time()
        lr = lr_at(step, a)
        if a.max_minutes and a.cooldown_minutes and step >= a.warmup:
            # Time-aware cool-down: once fewer than --cooldown-minutes remain (or the step
            # schedule's cool-down has begun), each step moves the learning rate 1/n of the
            # way to --min-lr, n = steps left before the budget ends at the recent pace.
            remaining = a.max_minutes * 60 - (time.time() - start)
            if remaining < a.cooldown_minutes * 60 or lr < a.lr:
                steps_left = min(a.max_steps - step, remaining / max(step_wall or 1.0, 1e-3))
                current = opt.param_groups[0]["lr"]
                lr = min(lr, current - (current - a.min_lr) / max(1.0, steps_left))
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(tokens, starts, a, gen)
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        train_seconds += time.time() - t_step
        wall = time.time() - last_step_end       # includes evaluation and checkpoint time
        last_step_end = time.time()
        step_wall = wall if step_wall is None else 0.95 * step_wall + 0.05 * wall
        tick_tokens += x.numel()
        if step % a.log_every == 0:
            now = time.time()
            print(f"step {step}/{a.max_steps} loss {loss.item():.4f} lr {lr:.2e} "
                  f"{tick_tokens / (now - tick):,.0f} tok/s, {train_seconds / 60:.1f} min",
                  flush=True)
            tick, tick_tokens = now, 0
        if step % a.eval_every == 0:
            run_eval()
        if time.time() - last_ckpt > a.ckpt_minutes * 60:
            checkpoint("periodic")
            last_ckpt = time.time()
    if not history or history[-1]["step"] != step:
        run_eval()
    checkpoint("done" if step >= a.max_steps else "stopped")


if __name__ == "__main__":
    main()
