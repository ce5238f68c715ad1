"""Writes a small Hugging Face Llama-layout checkpoint with random weights
(config.json, model.safetensors or shards with model.safetensors.index.json)
and the logits of a reference forward written here from HF's documented
Llama math (rotate_half RoPE on the two halves of each head, GQA by
repeating K/V heads, RMSNorm, SiLU-gated MLP), for the import-hf tests.

    make_hf_checkpoint.py OUTDIR LOGITS.safetensors [options]

--heads H --kv-heads K --layers L --hidden D --ffn F --vocab V (sizes),
--tied (tie_word_embeddings), --shards N, --dtype f32|bf16|f16 (the stored
tensors'; the reference runs on them widened to f32), --tokens "1 2 3",
--config-set KEY=JSON (extra config.json entries), --extra TENSOR (an extra
tensor of shape (D,) in the checkpoint).
"""
import argparse
import json
import math
import os
import struct

import torch

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("logits")
p.add_argument("--heads", type=int, default=4)
p.add_argument("--kv-heads", type=int, default=4)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--ffn", type=int, default=96)
p.add_argument("--vocab", type=int, default=100)
p.add_argument("--tied", action="store_true")
p.add_argument("--shards", type=int, default=1)
p.add_argument("--dtype", default="f32")
p.add_argument("--tokens", default="3 14 15 92 65 35 89 79 32 38")
p.add_argument("--config-set", action="append", default=[])
p.add_argument("--extra", action="append", default=[])
p.add_argument("--seed", type=int, default=0)
a = p.parse_args()

torch.manual_seed(a.seed)
D, H, KV, F, V, L = a.hidden, a.heads, a.kv_heads, a.ffn, a.vocab, a.layers
dk = D // H
theta, eps = 10000.0, 1e-6
dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[a.dtype]
st_dtype = {"f32": "F32", "bf16": "BF16", "f16": "F16"}[a.dtype]


def lin(o, i):
    return (torch.randn(o, i) / math.sqrt(i)).to(dtype)


sd = {"model.embed_tokens.weight": torch.randn(V, D).to(dtype)}
for i in range(L):
    q = f"model.layers.{i}."
    sd[q + "self_attn.q_proj.weight"] = lin(H * dk, D)
    sd[q + "self_attn.k_proj.weight"] = lin(KV * dk, D)
    sd[q + "self_attn.v_proj.weight"] = lin(KV * dk, D)
    sd[q + "self_attn.o_proj.weight"] = lin(D, H * dk)
    sd[q + "mlp.gate_proj.weight"] = lin(F, D)
    sd[q + "mlp.up_proj.weight"] = lin(F, D)
    sd[q + "mlp.down_proj.weight"] = lin(D, F)
    sd[q + "input_layernorm.weight"] = (torch.rand(D) + 0.5).to(dtype)
    sd[q + "post_attention_layernorm.weight"] = (torch.rand(D) + 0.5).to(dtype)
sd["model.norm.weight"] = (torch.rand(D) + 0.5).to(dtype)
if not a.tied:
    sd["lm_head.weight"] = lin(V, D)
for name in a.extra:
    sd[name] = torch.zeros(D).to(dtype)


# The reference: HF's LlamaForCausalLM forward, in f32.
def w(name):
    return sd[name].float()


def rms(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


ids = torch.tensor([int(t) for t in a.tokens.split()])
T = len(ids)
inv = 1.0 / (theta ** (torch.arange(0, dk, 2, dtype=torch.float64) / dk))
freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv)
emb = torch.cat((freqs, freqs), dim=-1)
cos, sin = emb.cos().float(), emb.sin().float()
x = w("model.embed_tokens.weight")[ids]
mask = torch.full((T, T), float("-inf")).triu(1)
for i in range(L):
    q = f"model.layers.{i}."
    h = rms(x, w(q + "input_layernorm.weight"))
    Q = (h @ w(q + "self_attn.q_proj.weight").T).view(T, H, dk).transpose(0, 1)
    K = (h @ w(q + "self_attn.k_proj.weight").T).view(T, KV, dk).transpose(0, 1)
    Vv = (h @ w(q + "self_attn.v_proj.weight").T).view(T, KV, dk).transpose(0, 1)
    Q = Q * cos + rotate_half(Q) * sin
    K = K * cos + rotate_half(K) * sin
    K = K.repeat_interleave(H // KV, dim=0)
    Vv = Vv.repeat_interleave(H // KV, dim=0)
    att = torch.softmax(Q @ K.transpose(1, 2) / math.sqrt(dk) + mask, dim=-1)
    o = (att @ Vv).transpose(0, 1).reshape(T, D)
    x = x + o @ w(q + "self_attn.o_proj.weight").T
    h = rms(x, w(q + "post_attention_layernorm.weight"))
    g = h @ w(q + "mlp.gate_proj.weight").T
    u = h @ w(q + "mlp.up_proj.weight").T
    x = x + (torch.nn.functional.silu(g) * u) @ w(q + "mlp.down_proj.weight").T
x = rms(x, w("model.norm.weight"))
head = w("model.embed_tokens.weight") if a.tied else w("lm_head.weight")
logits = (x @ head.T).unsqueeze(0)


def write(path, tensors, meta=None):
    header, blobs, offset = {}, [], 0
    if meta:
        header["__metadata__"] = meta
    for name, t in tensors.items():
        t = t.contiguous()
        blob = (t.view(torch.int16) if t.dtype in (torch.bfloat16, torch.float16)
                else t).numpy().tobytes()
        kind = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}[t.dtype]
        header[name] = {"dtype": kind, "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


os.makedirs(a.out, exist_ok=True)
config = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": D, "intermediate_size": F, "num_hidden_layers": L,
    "num_attention_heads": H, "num_key_value_heads": KV, "vocab_size": V,
    "max_position_embeddings": 64, "rms_norm_eps": eps, "rope_theta": theta,
    "hidden_act": "silu", "tie_word_embeddings": a.tied, "rope_scaling": None,
    "attention_bias": False, "torch_dtype": {"f32": "float32", "bf16": "bfloat16",
                                             "f16": "float16"}[a.dtype],
    "bos_token_id": 1, "eos_token_id": 2,
}
for kv in a.config_set:
    k, v = kv.split("=", 1)
    config[k] = json.loads(v)
json.dump(config, open(os.path.join(a.out, "config.json"), "w"), indent=2)
names = list(sd)
if a.shards == 1:
    write(os.path.join(a.out, "model.safetensors"), sd, {"format": "pt"})
else:
    per = math.ceil(len(names) / a.shards)
    weight_map = {}
    for s in range(a.shards):
        part = names[s * per:(s + 1) * per]
        fname = f"model-{s + 1:05d}-of-{a.shards:05d}.safetensors"
        write(os.path.join(a.out, fname), {n: sd[n] for n in part}, {"format": "pt"})
        weight_map.update({n: fname for n in part})
    json.dump({"metadata": {}, "weight_map": weight_map},
              open(os.path.join(a.out, "model.safetensors.index.json"), "w"))
write(a.logits, {"logits": logits})
