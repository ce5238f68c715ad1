"""Writes a random CS336-style checkpoint (as torch.compile saves it), a token
file, and PyTorch's own logits for those tokens, for the converter test."""
import math
import struct
import json
import sys

import torch

torch.manual_seed(0)
V, D, L, H, KV, F = 50, 32, 2, 4, 2, 48
dk = D // H


def lin(o, i):
    return torch.randn(o, i) / math.sqrt(i)


sd = {"token_embeddings.weight": torch.randn(V, D)}
for i in range(L):
    p = f"layers.{i}."
    sd[p + "attn.q_proj.weight"] = lin(D, D)
    sd[p + "attn.k_proj.weight"] = lin(KV * dk, D)
    sd[p + "attn.v_proj.weight"] = lin(KV * dk, D)
    sd[p + "attn.o_proj.weight"] = lin(D, D)  # the alias
    sd[p + "ln1.weight"] = torch.rand(D) + 0.5
    sd[p + "ln2.weight"] = torch.rand(D) + 0.5
    sd[p + "ffn.w1.weight"] = lin(F, D)
    sd[p + "ffn.w2.weight"] = lin(D, F)
    sd[p + "ffn.w3.weight"] = lin(F, D)
sd["ln_final.weight"] = torch.rand(D) + 0.5
torch.save({"_orig_mod." + k: v for k, v in sd.items()}, sys.argv[1])


def rms(x, g):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + 1e-5) * g


def rope(x):  # (B, H, S, dk), interleaved pairs
    S = x.shape[2]
    i = torch.arange(dk // 2, dtype=torch.float64)
    ang = torch.arange(S, dtype=torch.float64)[:, None] * 10000.0 ** (-2 * i / dk)
    c, s = torch.cos(ang).float(), torch.sin(ang).float()
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * c - b * s, a * s + b * c], -1).flatten(-2)


ids = torch.randint(0, V, (2, 7))
x = sd["token_embeddings.weight"][ids]
B, S = ids.shape
for i in range(L):
    p = f"layers.{i}."
    h = rms(x, sd[p + "ln1.weight"])
    q = (h @ sd[p + "attn.q_proj.weight"].T).view(B, S, H, dk).transpose(1, 2)
    k = (h @ sd[p + "attn.k_proj.weight"].T).view(B, S, KV, dk).transpose(1, 2)
    v = (h @ sd[p + "attn.v_proj.weight"].T).view(B, S, KV, dk).transpose(1, 2)
    q, k = rope(q), rope(k)
    k = k.repeat_interleave(H // KV, 1)
    v = v.repeat_interleave(H // KV, 1)
    sc = q @ k.transpose(-1, -2) / math.sqrt(dk)
    sc = sc.masked_fill(torch.triu(torch.ones(S, S, dtype=torch.bool), 1), float("-inf"))
    o = (sc.softmax(-1) @ v).transpose(1, 2).reshape(B, S, D)
    x = x + o @ sd[p + "attn.o_proj.weight"].T
    h = rms(x, sd[p + "ln2.weight"])
    a = h @ sd[p + "ffn.w1.weight"].T
    x = x + ((a * torch.sigmoid(a)) * (h @ sd[p + "ffn.w3.weight"].T)) @ sd[p + "ffn.w2.weight"].T
logits = rms(x, sd["ln_final.weight"]) @ sd["token_embeddings.weight"].T


def save(path, name, t, dtype, fmt):
    blob = struct.pack("<%d%s" % (t.numel(), fmt), *t.flatten().tolist())
    head = json.dumps({name: {"dtype": dtype, "shape": list(t.shape),
                              "data_offsets": [0, len(blob)]}}).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + blob)


save(sys.argv[2], "tokens", ids, "I64", "q")
save(sys.argv[3], "expected", logits, "F32", "f")
