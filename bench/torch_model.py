#!/usr/bin/env python3
"""The PyTorch eager baseline of bench/compare.sh.

A plain TransformerLM of docs/spec/model.md (pre-norm RMSNorm, RoPE on
interleaved pairs, SwiGLU, causal attention with GQA, optional tied head)
with a KV cache, reading the same safetensors weights tlm-run wrote. It
times one prefill of --prompt-len tokens and --gen one-token decode steps
exactly like `tlm-run bench` (a warm-up prefill of the same length and one
decode step first; every step computes the last position's logits only, as
generation needs) and prints one JSON line.

    torch_model.py --config C.json --weights W.safetensors \
        --prompt-len 128 --gen 64 --threads 1
"""
import argparse
import json
import struct
import time

import torch


def load_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        lo, hi = info["data_offsets"]
        t = torch.frombuffer(bytearray(data[base + lo:base + hi]),
                             dtype=torch.float32)
        out[name] = t.reshape(info["shape"])
    return out


class Model:
    def __init__(self, c, w):
        self.c = c
        self.w = w
        self.heads = c["num_heads"]
        self.kv_heads = c.get("num_kv_heads", self.heads)
        self.dk = c["d_model"] // self.heads
        self.eps = c.get("eps", 1e-5)
        self.head = w.get("lm_head.weight", w["token_embeddings.weight"])
        half = self.dk // 2
        freq = c["rope_theta"] ** (-torch.arange(half, dtype=torch.float64) * 2
                                   / self.dk)
        ang = torch.arange(c["context_length"], dtype=torch.float64)[:, None] * freq
        self.cos = torch.cos(ang).float()
        self.sin = torch.sin(ang).float()
        self.cache = []

    def rms(self, x, g):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * g

    def rope(self, x, pos):  # x: (B, S, H, dk), interleaved pairs
        c = self.cos[pos][None, :, None, :]
        s = self.sin[pos][None, :, None, :]
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack((a * c - b * s, a * s + b * c), -1).flatten(-2)

    def step(self, ids, start, last=False):
        w, B, S = self.w, ids.shape[0], ids.shape[1]
        pos = torch.arange(start, start + S)
        x = w["token_embeddings.weight"][ids]
        for i in range(self.c["num_layers"]):
            p = f"layers.{i}."
            h = self.rms(x, w[p + "ln1.weight"])
            q = (h @ w[p + "attn.q_proj.weight"].T).view(B, S, self.heads, self.dk)
            k = (h @ w[p + "attn.k_proj.weight"].T).view(B, S, self.kv_heads, self.dk)
            v = (h @ w[p + "attn.v_proj.weight"].T).view(B, S, self.kv_heads, self.dk)
            q, k = self.rope(q, pos), self.rope(k, pos)
            if start == 0:
                if len(self.cache) <= i:
                    self.cache.append(None)
                self.cache[i] = (k, v)
            else:
                pk, pv = self.cache[i]
                self.cache[i] = (torch.cat((pk, k), 1), torch.cat((pv, v), 1))
            k, v = self.cache[i]
            g = self.heads // self.kv_heads
            k = k.repeat_interleave(g, 2).transpose(1, 2)
            v = v.repeat_interleave(g, 2).transpose(1, 2)
            q = q.transpose(1, 2)
            T = k.shape[2]
            att = (q @ k.transpose(-1, -2)) / self.dk ** 0.5
            mask = torch.ones(S, T, dtype=torch.bool).tril(T - S)
            att = att.masked_fill(~mask, float("-inf")).softmax(-1)
            o = (att @ v).transpose(1, 2).reshape(B, S, -1)
            x = x + o @ w[p + "attn.output_proj.weight"].T
            h = self.rms(x, w[p + "ln2.weight"])
            a = torch.nn.functional.silu(h @ w[p + "ffn.w1.weight"].T)
            x = x + (a * (h @ w[p + "ffn.w3.weight"].T)) @ w[p + "ffn.w2.weight"].T
        if last:  # generation needs the last position's logits only
            x = x[:, -1:]
        return self.rms(x, w["ln_final.weight"]) @ self.head.T


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", required=True)
    ap.add_argument("--weights", required=True)
    ap.add_argument("--prompt-len", type=int, required=True)
    ap.add_argument("--gen", type=int, required=True)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--check-logits", metavar="ST",
                    help="tlm-run forward's output for the first 16 prompt "
                         "tokens: report the max abs difference from ours")
    ap.add_argument("--atol", type=float, default=1e-4,
                    help="with --check-logits: exit 1 unless the max abs "
                         "difference is within atol + rtol * max |logit| "
                         "(relative to the logits' scale: random-init "
                         "logits reach the hundreds)")
    ap.add_argument("--rtol", type=float, default=1e-4)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with open(a.config) as f:
        c = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    m = Model(c, load_safetensors(a.weights))
    vocab = c["vocab_size"]
    prompt = (torch.arange(a.prompt_len) * 7919 % vocab)[None, :]
    with torch.inference_mode():
        if a.check_logits:
            theirs = load_safetensors(a.check_logits)["logits"]
            ours = m.step(prompt[:, :theirs.shape[1]], 0)
            err = (ours - theirs).abs()
            ok = err.max().item() <= a.atol + a.rtol * theirs.abs().max().item()
            print(json.dumps({"max_abs_diff": err.max().item(),
                              "max_abs_logit": theirs.abs().max().item(),
                              "elements": ours.numel(), "within_tol": ok}))
            raise SystemExit(0 if ok else 1)
        # Warm-up with the measured shapes, as tlm-run bench does; every
        # step computes the last position's logits, as generation needs.
        m.step(prompt, 0, last=True)
        m.step(prompt[:, :1], a.prompt_len, last=True)
        t = time.perf_counter()
        m.step(prompt, 0, last=True)
        prefill = time.perf_counter() - t
        nxt = torch.ones(1, 1, dtype=torch.long)
        t = time.perf_counter()
        for i in range(a.gen):
            m.step(nxt, a.prompt_len + i, last=True)
        decode = time.perf_counter() - t
    print(json.dumps({"prefill_tok_s": a.prompt_len / prefill,
                      "decode_tok_s": a.gen / decode if a.gen else 0.0,
                      "threads": a.threads, "torch": torch.__version__}))


if __name__ == "__main__":
    main()
