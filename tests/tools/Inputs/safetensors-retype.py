"""Rewrites one tensor of a safetensors file in another dtype (F32, BF16,
F16, I8 or I16), values converted, everything else copied: the inputs of the tests of
a file whose tensors disagree in dtype.

    safetensors-retype.py IN.safetensors TENSOR DTYPE OUT.safetensors
"""
import json
import struct
import sys

import numpy as np


def to_f32(raw, dtype):
    if dtype == "F32":
        return np.frombuffer(raw, dtype=np.float32)
    if dtype == "F16":
        return np.frombuffer(raw, dtype=np.float16).astype(np.float32)
    if dtype == "BF16":
        return (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
    raise SystemExit(f"unsupported dtype {dtype}")


def from_f32(values, dtype):
    if dtype == "F32":
        return values.astype(np.float32).tobytes()
    if dtype == "F16":
        return values.astype(np.float16).tobytes()
    if dtype == "I8":  # truncated: only the dtype matters to the tests
        return values.astype(np.int8).tobytes()
    if dtype == "I16":
        return values.astype(np.int16).tobytes()
    if dtype == "BF16":  # round to nearest even
        u = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16).tobytes()
    raise SystemExit(f"unsupported dtype {dtype}")


src, name, dtype, dst = sys.argv[1:5]
blob = open(src, "rb").read()
n = struct.unpack("<Q", blob[:8])[0]
header = json.loads(blob[8 : 8 + n])
data = blob[8 + n :]
meta = header.pop("__metadata__", None)
out_header, parts, offset = {}, [], 0
for key, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0]):
    begin, end = info["data_offsets"]
    raw = data[begin:end]
    kind = info["dtype"]
    if key == name:
        raw, kind = from_f32(to_f32(raw, kind), dtype), dtype
    out_header[key] = {"dtype": kind, "shape": info["shape"],
                       "data_offsets": [offset, offset + len(raw)]}
    parts.append(raw)
    offset += len(raw)
if name not in header:
    raise SystemExit(f"no tensor {name} in {src}")
if meta is not None:
    out_header["__metadata__"] = meta
text = json.dumps(out_header).encode()
text += b" " * (-len(text) % 8)
with open(dst, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(parts))
