#!/usr/bin/env python3
"""PyTorch autograd as the reference for tlm's training step.

The TransformerLM of docs/spec/model.md with every switch of the config
(RMSNorm or none, pre or post norm, RoPE or none, SwiGLU or SiLU, GQA, tied
or untied head), in float32 eager PyTorch, reading tlm's safetensors.

    torch_train.py tokens --vocab V --batch B --seq S --seed N -o T.safetensors
        write a random (B, S + 1) int64 'tokens' tensor
    torch_train.py grad-check --config C.json --weights W.safetensors \
        --tokens T.safetensors --grads G.safetensors [--tol 1e-4]
        compare tlm-run grad's output with autograd: the loss within tol
        (relative), every gradient within tol of its tensor's largest |g|;
        one line per tensor, exit 1 on any miss
    torch_train.py train-check --config C.json --weights W.safetensors \
        --tokens T.safetensors --batch B --steps N --lr LR [--adamw torch] \
        [--max-norm M] [--weight-decay L] --losses tlm.json [--tol 1e-4]
        the same steps in PyTorch (clip_grad_norm_, then CS336's AdamW or
        torch.optim.AdamW): every step's loss within tol (relative) of the
        `losses` of tlm-run train --json's line; exit 1 on any miss
    torch_train.py train-run --config C.json --weights W.safetensors \
        --train-data train.bin --val-data val.bin --batch B --seq T \
        --steps N --lr LR --min-lr LR --warmup N [--beta2 B] \
        [--weight-decay L] [--max-norm M] [--eval-batches N] [--seed S] \
        [--threads N]
        tlm-run train --train-data's run in PyTorch: uint16 token files, the
        same batches (the same SplitMix64 draws, lib/runtime/Batches.h), the
        same cosine schedule, clipping and CS336's AdamW; one JSON line with
        the validation loss on the same fixed batches, seconds and tok_s
    torch_train.py bench --config C.json --batch B --seq T --threads N \
        [--steps 5]
        PyTorch eager's full step (forward, backward, clipping, AdamW) on
        seeded weights and random tokens: one JSON line with ms_per_step
        and tok_s, the peer of tlm-run bench --train
"""
import argparse
import json
import struct
import sys

import torch


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    dtypes = {"F32": torch.float32, "I64": torch.int64, "I32": torch.int32}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        lo, hi = info["data_offsets"]
        raw = bytearray(data[8 + n + lo:8 + n + hi])
        out[name] = torch.frombuffer(raw, dtype=dtypes[info["dtype"]]).reshape(
            info["shape"]).clone()
    return out


def write_safetensors(path, tensors):
    header, blobs, offset = {}, [], 0
    names = {torch.float32: "F32", torch.int64: "I64"}
    for name, t in tensors.items():
        raw = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


class Model:
    """The forward of docs/spec/model.md on a dict of parameter tensors."""

    def __init__(self, c):
        self.c = c
        self.heads = c["num_heads"]
        self.kv_heads = c.get("num_kv_heads", self.heads)
        self.dk = c["d_model"] // self.heads
        self.eps = c.get("rms_norm_eps", 1e-5)
        self.rmsnorm = c.get("use_rmsnorm", True)
        self.post = c.get("norm_position", "pre") == "post"
        self.rope = c.get("use_rope", True)
        self.swiglu = c.get("use_swiglu", True)
        self.tied = c.get("tie_embeddings", False)

    def norm(self, x, w, name):
        if not self.rmsnorm:
            return x
        r = torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return x / r * w[name]

    def rotate(self, x):  # (B, S, H, dk), pairs (2i, 2i + 1)
        seq = x.shape[1]
        half = self.dk // 2
        freq = self.c["rope_theta"] ** (
            -torch.arange(half, dtype=torch.float64) * 2 / self.dk)
        ang = torch.arange(seq, dtype=torch.float64)[:, None] * freq
        cos = torch.cos(ang).float()[None, :, None, :]
        sin = torch.sin(ang).float()[None, :, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * cos - b * sin, a * sin + b * cos),
                           -1).flatten(-2)

    def attention(self, x, w, p):
        bsz, seq, _ = x.shape
        q = (x @ w[p + "attn.q_proj.weight"].T).view(bsz, seq, self.heads,
                                                     self.dk)
        k = (x @ w[p + "attn.k_proj.weight"].T).view(bsz, seq, self.kv_heads,
                                                     self.dk)
        v = (x @ w[p + "attn.v_proj.weight"].T).view(bsz, seq, self.kv_heads,
                                                     self.dk)
        if self.rope:
            q, k = self.rotate(q), self.rotate(k)
        group = self.heads // self.kv_heads
        k = k.repeat_interleave(group, dim=2)
        v = v.repeat_interleave(group, dim=2)
        s = torch.einsum("bihd,bjhd->bhij", q, k) / self.dk ** 0.5
        mask = torch.ones(seq, seq, dtype=torch.bool).tril()
        s = s.masked_fill(~mask, float("-inf"))
        o = torch.einsum("bhij,bjhd->bihd", s.softmax(-1), v)
        return o.reshape(bsz, seq, -1) @ w[p + "attn.output_proj.weight"].T

    def ffn(self, x, w, p):
        a = torch.nn.functional.silu(x @ w[p + "ffn.w1.weight"].T)
        if self.swiglu:
            a = a * (x @ w[p + "ffn.w3.weight"].T)
        return a @ w[p + "ffn.w2.weight"].T

    def loss(self, w, inputs, targets):
        x = w["token_embeddings.weight"][inputs]
        for i in range(self.c["num_layers"]):
            p = "layers.%d." % i
            if self.post:
                h = self.norm(x + self.attention(x, w, p), w, p + "ln1.weight")
                x = self.norm(h + self.ffn(h, w, p), w, p + "ln2.weight")
            else:
                h = x + self.attention(self.norm(x, w, p + "ln1.weight"), w, p)
                x = h + self.ffn(self.norm(h, w, p + "ln2.weight"), w, p)
        x = self.norm(x, w, "ln_final.weight")
        head = w["token_embeddings.weight" if self.tied else "lm_head.weight"]
        logits = x @ head.T
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def load_run(args):
    """The config, the weights (as leaves autograd differentiates) and the
    token rows that --config, --weights and --tokens name."""
    with open(args.config) as f:
        config = json.load(f)
    weights = {k: v.requires_grad_() for k, v in
               read_safetensors(args.weights).items()}
    return config, weights, read_safetensors(args.tokens)["tokens"].long()


def grad_check(args):
    config, weights, tokens = load_run(args)
    theirs = read_safetensors(args.grads)
    loss = Model(config).loss(weights, tokens[:, :-1], tokens[:, 1:])
    loss.backward()
    ok = True
    mine = loss.item()
    err = abs(theirs["loss"].item() - mine) / max(abs(mine), 1e-30)
    print("loss: tlm %.7f torch %.7f relative error %.2e" %
          (theirs["loss"].item(), mine, err))
    ok &= err <= args.tol
    if set("grad." + k for k in weights) != set(theirs) - {"loss"}:
        print("tensor names differ: %s" % sorted(set(theirs) ^ set(
            "grad." + k for k in weights) - {"loss"}))
        return 1
    for name, w in sorted(weights.items()):
        g = w.grad
        scale = g.abs().max().item()
        diff = (theirs["grad." + name] - g).abs().max().item()
        rel = diff / scale if scale > 0 else diff
        good = rel <= args.tol
        ok &= good
        print("%-32s max|g| %.3e  max diff / max|g| %.2e%s" %
              (name, scale, rel, "" if good else "  FAIL"))
    return 0 if ok else 1


def adamw_cs336(params, state, t, lr, beta1, beta2, eps, wd):
    """CS336's Algorithm 1: bias corrections in double, tensors in float."""
    c1, c2 = 1 - beta1 ** t, 1 - beta2 ** t
    alpha = lr * c2 ** 0.5 / c1
    with torch.no_grad():
        for name, p in params.items():
            m, v = state.setdefault(name, (torch.zeros_like(p),
                                           torch.zeros_like(p)))
            m.mul_(beta1).add_(p.grad, alpha=1 - beta1)
            v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
            p.sub_(alpha * m / (v.sqrt() + eps))
            p.sub_(lr * wd * p)


def train_check(args):
    config, params, tokens = load_run(args)
    with open(args.losses) as f:
        theirs = json.loads(f.read().strip().splitlines()[-1])["losses"]
    model = Model(config)
    opt = None
    if args.adamw == "torch":
        opt = torch.optim.AdamW(params.values(), lr=args.lr,
                                betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=args.weight_decay)
    state, ok, worst = {}, len(theirs) == args.steps, 0.0
    for step in range(args.steps):
        rows = torch.arange(step * args.batch,
                            (step + 1) * args.batch) % tokens.shape[0]
        batch = tokens[rows]
        for p in params.values():
            p.grad = None
        loss = model.loss(params, batch[:, :-1], batch[:, 1:])
        loss.backward()
        if args.max_norm > 0:
            torch.nn.utils.clip_grad_norm_(params.values(), args.max_norm)
        if opt:
            opt.step()
        else:
            adamw_cs336(params, state, step + 1, args.lr, 0.9, 0.999, 1e-8,
                        args.weight_decay)
        if step < len(theirs):
            err = abs(theirs[step] - loss.item()) / abs(loss.item())
            worst = max(worst, err)
            ok &= err <= args.tol
            if args.verbose or err > args.tol:
                print("step %d: tlm %.7f torch %.7f relative error %.2e" %
                      (step + 1, theirs[step], loss.item(), err))
    print("%d steps, worst relative loss error %.2e, last loss %.6f: %s" %
          (args.steps, worst, loss.item(), "ok" if ok else "FAIL"))
    return 0 if ok else 1


def init_weights(config, gen):
    """Weights of the config's names and shapes, N(0, 0.02)."""
    d, dff, vocab = config["d_model"], config["d_ff"], config["vocab_size"]
    heads = config["num_heads"]
    kv = config.get("num_kv_heads", heads) * (d // heads)
    shapes = {"token_embeddings.weight": (vocab, d)}
    for i in range(config["num_layers"]):
        p = "layers.%d." % i
        shapes.update({p + "attn.q_proj.weight": (d, d),
                       p + "attn.k_proj.weight": (kv, d),
                       p + "attn.v_proj.weight": (kv, d),
                       p + "attn.output_proj.weight": (d, d),
                       p + "ffn.w1.weight": (dff, d),
                       p + "ffn.w2.weight": (d, dff)})
        if config.get("use_swiglu", True):
            shapes[p + "ffn.w3.weight"] = (dff, d)
        if config.get("use_rmsnorm", True):
            shapes[p + "ln1.weight"] = (d,)
            shapes[p + "ln2.weight"] = (d,)
    if config.get("use_rmsnorm", True):
        shapes["ln_final.weight"] = (d,)
    if not config.get("tie_embeddings", False):
        shapes["lm_head.weight"] = (vocab, d)
    return {k: (torch.ones(s) if len(s) == 1 else
                torch.randn(s, generator=gen) * 0.02).requires_grad_()
            for k, s in shapes.items()}


def bench(args):
    import time
    torch.set_num_threads(args.threads)
    with open(args.config) as f:
        config = json.load(f)
    gen = torch.Generator().manual_seed(0)
    params = init_weights(config, gen)
    model = Model(config)
    opt = torch.optim.AdamW(params.values(), lr=1e-4)
    tokens = torch.randint(0, config["vocab_size"], (args.batch, args.seq + 1),
                           generator=gen)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model.loss(params, tokens[:, :-1], tokens[:, 1:])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params.values(), 1.0)
        opt.step()

    step()  # warm-up
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    ms = sorted(times)[len(times) // 2] * 1e3
    print(json.dumps({"peer": "pytorch-eager", "torch": torch.__version__,
                      "threads": args.threads, "batch": args.batch,
                      "seq": args.seq, "ms_per_step": round(ms, 2),
                      "tok_s": round(args.batch * args.seq / ms * 1e3, 1)}))
    return 0


class SplitMix64:
    """lib/runtime/Batches.h's generator, bit for bit."""

    MASK = (1 << 64) - 1

    def __init__(self, seed):
        self.state = seed & self.MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & self.MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & self.MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & self.MASK
        return z ^ (z >> 31)

    def below(self, n):
        limit = self.MASK - self.MASK % n  # UINT64_MAX - UINT64_MAX % n
        while True:
            x = self.next()
            if x < limit:
                return x % n


def draw_batch(data, rng, batch, seq):
    starts = [rng.below(len(data) - seq) for _ in range(batch)]
    rows = torch.stack([data[s:s + seq + 1] for s in starts])
    return rows[:, :-1], rows[:, 1:]


def cosine_lr(t, max_lr, min_lr, warmup, end):
    import math
    if t < warmup:
        return t / warmup * max_lr
    if t > end:
        return min_lr
    if end == warmup:
        return max_lr
    return min_lr + (1 + math.cos(math.pi * (t - warmup) / (end - warmup))) / 2 * (
        max_lr - min_lr)


def train_run(args):
    import time
    import numpy
    torch.set_num_threads(args.threads)
    with open(args.config) as f:
        config = json.load(f)
    params = {k: v.requires_grad_() for k, v in
              read_safetensors(args.weights).items()}
    load = lambda p: torch.from_numpy(numpy.fromfile(p, dtype="<u2").astype("int64"))
    train, val = load(args.train_data), load(args.val_data)
    model = Model(config)
    rng = SplitMix64(args.seed)
    val_rng = SplitMix64(args.seed ^ 0x76616C6964)  # TrainLoop.cpp's kValidationSeed
    val_batches = [draw_batch(val, val_rng, args.batch, args.seq)
                   for _ in range(args.eval_batches)]
    state = {}
    start = time.perf_counter()
    end = max(args.steps - 1, args.warmup)
    for step in range(args.steps):
        inputs, targets = draw_batch(train, rng, args.batch, args.seq)
        for p in params.values():
            p.grad = None
        loss = model.loss(params, inputs, targets)
        loss.backward()
        if args.max_norm > 0:
            torch.nn.utils.clip_grad_norm_(params.values(), args.max_norm)
        lr = cosine_lr(step, args.lr, args.min_lr, args.warmup, end)
        adamw_cs336(params, state, step + 1, lr, 0.9, args.beta2, 1e-8,
                    args.weight_decay)
    seconds = time.perf_counter() - start
    with torch.no_grad():
        val_loss = sum(model.loss(params, i, t).item()
                       for i, t in val_batches) / len(val_batches)
    print(json.dumps({"peer": "pytorch-eager", "torch": torch.__version__,
                      "threads": args.threads, "steps": args.steps,
                      "val_loss": val_loss, "seconds": round(seconds, 2),
                      "tok_s": round(args.steps * args.batch * args.seq / seconds, 1)}))
    return 0


def make_tokens(args):
    gen = torch.Generator().manual_seed(args.seed)
    t = torch.randint(0, args.vocab, (args.batch, args.seq + 1),
                      generator=gen, dtype=torch.int64)
    write_safetensors(args.output, {"tokens": t})
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("tokens")
    t.add_argument("--vocab", type=int, required=True)
    t.add_argument("--batch", type=int, required=True)
    t.add_argument("--seq", type=int, required=True)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("-o", "--output", required=True)
    g = sub.add_parser("grad-check")
    for name in ("--config", "--weights", "--tokens", "--grads"):
        g.add_argument(name, required=True)
    g.add_argument("--tol", type=float, default=1e-4)
    r = sub.add_parser("train-check")
    for name in ("--config", "--weights", "--tokens", "--losses"):
        r.add_argument(name, required=True)
    r.add_argument("--batch", type=int, required=True)
    r.add_argument("--steps", type=int, required=True)
    r.add_argument("--lr", type=float, default=1e-3)
    r.add_argument("--weight-decay", type=float, default=0.01)
    r.add_argument("--max-norm", type=float, default=1.0)
    r.add_argument("--adamw", choices=("cs336", "torch"), default="cs336")
    r.add_argument("--tol", type=float, default=1e-4)
    r.add_argument("--verbose", action="store_true")
    w = sub.add_parser("train-run")
    for name in ("--config", "--weights", "--train-data", "--val-data"):
        w.add_argument(name, required=True)
    for name in ("--batch", "--seq", "--steps", "--warmup"):
        w.add_argument(name, type=int, required=True)
    w.add_argument("--lr", type=float, required=True)
    w.add_argument("--min-lr", type=float, required=True)
    w.add_argument("--beta2", type=float, default=0.999)
    w.add_argument("--weight-decay", type=float, default=0.01)
    w.add_argument("--max-norm", type=float, default=1.0)
    w.add_argument("--eval-batches", type=int, default=8)
    w.add_argument("--seed", type=int, default=0)
    w.add_argument("--threads", type=int, default=1)
    b = sub.add_parser("bench")
    b.add_argument("--config", required=True)
    b.add_argument("--batch", type=int, required=True)
    b.add_argument("--seq", type=int, required=True)
    b.add_argument("--threads", type=int, default=1)
    b.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    torch.manual_seed(0)
    run = {"tokens": make_tokens, "grad-check": grad_check,
           "train-check": train_check, "train-run": train_run, "bench": bench}
    return run[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
