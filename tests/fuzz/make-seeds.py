#!/usr/bin/env python3
"""Regenerates the seed corpora under tests/fuzz/corpus/ (each file < 8 KB).

Run from anywhere: python3 tests/fuzz/make-seeds.py. Existing files of the
same names are overwritten; others are left alone.
"""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def out(kind, name, data):
    d = os.path.join(HERE, "corpus", kind)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- config -----------------------------------------------------------------
for name in sorted(os.listdir(os.path.join(ROOT, "examples"))):
    if name.endswith(".json"):
        with open(os.path.join(ROOT, "examples", name), "rb") as f:
            out("config", "valid-" + name, f.read())

base = {"vocab_size": 256, "context_length": 64, "d_model": 64,
        "num_layers": 2, "num_heads": 4, "num_kv_heads": 2, "d_ff": 128,
        "rope_theta": 10000.0}


def cfg(name, **changes):
    c = dict(base)
    for k, v in changes.items():
        if v is None:
            c.pop(k, None)
        else:
            c[k] = v
    out("config", name, json.dumps(c, indent=1))


cfg("valid-all-keys.json", rms_norm_eps=1e-6, use_rmsnorm=True,
    norm_position="post", use_rope=True, use_swiglu=False,
    tie_embeddings=True, dtype="f32", _note="comment", **{"// x": 1})
cfg("valid-no-kv-heads.json", num_kv_heads=None)
cfg("invalid-missing-key.json", d_ff=None)
cfg("invalid-negative.json", num_layers=-3)
cfg("invalid-too-large.json", vocab_size=1 << 40)
cfg("invalid-float-size.json", d_model=64.5)
cfg("invalid-theta-string.json", rope_theta="10000")
cfg("invalid-theta-zero.json", rope_theta=0)
cfg("invalid-indivisible.json", num_heads=3)
cfg("invalid-kv-indivisible.json", num_kv_heads=3)
cfg("invalid-odd-head-dim.json", d_model=12, num_heads=4, num_kv_heads=4)
cfg("invalid-unknown-key.json", vocab_sise=256)
cfg("invalid-norm-position.json", norm_position="middle")
cfg("invalid-dtype.json", dtype="bf16")
cfg("invalid-bool.json", use_rope=1)
out("config", "invalid-duplicate-key.json",
    '{"vocab_size": 256, "vocab_size": 512, "context_length": 64,'
    ' "d_model": 64, "num_layers": 2, "num_heads": 4, "d_ff": 128,'
    ' "rope_theta": 10000.0}')
out("config", "invalid-syntax.json",
    '{\n  "vocab_size": 256,\n  "context_length": 64,,\n}')
out("config", "invalid-truncated.json", '{"vocab_size": 256, "context_le')
out("config", "invalid-array.json", '[1, 2, {"a": null}]')
out("config", "invalid-empty.json", "")
out("config", "invalid-nested.json", "[" * 300 + "]" * 300)
out("config", "invalid-escapes.json",
    '{"vocab_size": 256, "_c": "\\u00e9\\ud83d\\ude42\\n", "x\\u0000": 1}')

# --- safetensors ------------------------------------------------------------


def st(name, tensors, metadata=None, pad=True, header_extra=None):
    """tensors: list of (name, dtype, shape, bytes)."""
    header, blob = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for tname, dtype, shape, data in tensors:
        header[tname] = {"dtype": dtype, "shape": shape,
                         "data_offsets": [len(blob), len(blob) + len(data)]}
        blob += data
    if header_extra:
        header.update(header_extra)
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    data = struct.pack("<Q", len(text)) + text + blob
    out("safetensors", name, data)
    return data


def f32(*values):
    return struct.pack("<%df" % len(values), *values)


st("one-f32.safetensors", [("w", "F32", [2, 3], f32(*range(6)))])
st("many-dtypes.safetensors", [
    ("a.f64", "F64", [2], struct.pack("<2d", 1.5, -2.0)),
    ("b.f32", "F32", [1, 2], f32(3.0, 4.0)),
    ("c.f16", "F16", [2], b"\x00\x3c\x00\xc0"),
    ("d.bf16", "BF16", [2], b"\x80\x3f\x00\x40"),
    ("e.i64", "I64", [1], struct.pack("<q", -7)),
    ("f.i32", "I32", [2], struct.pack("<2i", 1, -1)),
    ("g.i16", "I16", [2], struct.pack("<2h", 1, -1)),
    ("h.i8", "I8", [3], b"\x01\xff\x7f"),
    ("i.u8", "U8", [1], b"\xfe"),
    ("j.bool", "BOOL", [2], b"\x00\x01"),
], metadata={"format": "pt"})
st("scalar-and-empty.safetensors", [
    ("scalar", "F32", [], f32(42.0)),
    ("empty", "F32", [0, 4], b""),
    ("x", "F32", [1], f32(1.0)),
])
st("unaligned.safetensors", [("b", "U8", [3], b"abc"),
                             ("w", "F32", [2], f32(1.0, 2.0))], pad=False)
st("metadata-only.safetensors", [], metadata={"k": "v"})
st("invalid-overlap.safetensors", [("a", "F32", [2], f32(1.0, 2.0))],
   header_extra={"b": {"dtype": "F32", "shape": [1],
                       "data_offsets": [4, 8]}})
st("invalid-dtype.safetensors", [("a", "F8_E4M3", [4], b"\x00" * 4)])
good = st("invalid-size-mismatch.safetensors",
          [("a", "F32", [3], f32(1.0, 2.0))])
full = st("truncated-src.safetensors",
          [("emb", "F32", [4, 4], f32(*range(16))),
           ("bias", "F32", [4], f32(*range(4)))])
os.remove(os.path.join(HERE, "corpus", "safetensors", "truncated-src.safetensors"))
out("safetensors", "invalid-truncated-data.safetensors", full[:-10])
out("safetensors", "invalid-truncated-header.safetensors", full[:40])
out("safetensors", "invalid-header-length.safetensors",
    struct.pack("<Q", 1 << 40) + b"{}")
out("safetensors", "invalid-not-json.safetensors",
    struct.pack("<Q", 8) + b"not json")

# --- tokenizer (llama2.c tokenizer.bin) -------------------------------------


def tok(name, pieces, max_len=None):
    max_len = max_len or max(len(p) for p, _ in pieces)
    data = struct.pack("<i", max_len)
    for p, score in pieces:
        data += struct.pack("<fi", score, len(p)) + p
    out("tokenizer", name, data)
    return data


specials = [(b"<unk>", 0.0), (b"<s>", 0.0), (b"</s>", 0.0)]
byte_pieces = [(b"<0x%02X>" % b, 0.0) for b in range(256)]
normal = [b" ", b"h", b"e", b"l", b"o", b"w", b"r", b"d", b"a", b",",
          b"\xc3\xa9", b"\xe6\x97\xa5",
          b"ll", b"he", b"lo", b" h", b"llo", b"hel", b"hello", b" hello",
          b" w", b"or", b"ld", b" wor", b" world", b"aa", b"aaaa",
          b"  ", b"caf"]
# Later (longer) pieces score higher, so merges prefer them.
normal_scored = [(p, -100.0 + i) for i, p in enumerate(normal)]
full_tok = tok("valid-tiny.bin", specials + byte_pieces + normal_scored)
tok("valid-minimal.bin", specials + byte_pieces + [(b" ", 0.0)])
tok("valid-dup-and-empty.bin",
    specials + byte_pieces + [(b" ", 0.0), (b"", -1.0), (b"ab", -2.0),
                              (b"ab", 5.0), (b"a", -3.0), (b"b", -4.0),
                              (b"<0x41>", 1.0)], max_len=64)
out("tokenizer", "invalid-truncated.bin", full_tok[:len(full_tok) // 2])
tok("invalid-no-space.bin", specials + byte_pieces + [(b"x", 0.0)])
out("tokenizer", "invalid-max-len.bin", struct.pack("<i", 0) + full_tok[4:64])

# --- hf_tokenizer (Hugging Face tokenizer.json) ------------------------------
# The tokenizers of the lit tests, one of each family and pre-tokenizer,
# compact (no indentation) so they fit the target's -max_len.
import subprocess
import tempfile
with tempfile.TemporaryDirectory() as tmp:
    for kind in ["hand-bytelevel", "hand-sp", "llama3", "smollm", "metaspace"]:
        path = os.path.join(tmp, kind + ".json")
        subprocess.run([sys.executable, os.path.join(ROOT, "tests", "tools", "Inputs",
                                                     "make_hf_tokenizer.py"), kind, path],
                       check=True)
        with open(path, encoding="utf-8") as f:
            compact = json.dumps(json.load(f), ensure_ascii=False, separators=(",", ":"))
        out("hf_tokenizer", kind + ".json", compact.encode("utf-8"))
