"""Reads and edits tlm's quantized safetensors files with numpy, apart from
tlm's own code: an independent reading of the format that
docs/spec/config.md#quantized-weights documents, and the broken files
of the error tests.

    quantized-file.py dequantize IN OUT     every quantized matrix as F32
    quantized-file.py drop IN TENSOR OUT    without TENSOR
    quantized-file.py narrow IN TENSOR OUT  TENSOR without its last column
    quantized-file.py set IN TENSOR INDEX VALUE OUT
                                            element INDEX (flat) of an F32
                                            TENSOR set to VALUE ("nan", ...)
"""
import json
import struct
import sys

import numpy as np

BLOCK = 32
NUMPY = {"F32": np.float32, "I8": np.int8, "U8": np.uint8}


def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", None)
    data = raw[8 + n:]
    tensors = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        tensors[name] = (h["dtype"], h["shape"], data[a:b])
    return tensors, meta


def write(path, tensors, meta):
    header, offset, blobs = {}, 0, []
    if meta:
        header["__metadata__"] = meta
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def dequantize(dtype, shape, blob, scales):
    rows = shape[0]
    d = np.frombuffer(scales, dtype=np.float32).reshape(rows, -1, 1)
    if dtype == "I8":
        q = np.frombuffer(blob, dtype=np.int8).reshape(rows, -1, BLOCK)
        return (q.astype(np.float32) * d).reshape(rows, -1)
    # Byte j of a block: weight j in the low nibble, j + 16 in the high.
    b = np.frombuffer(blob, dtype=np.uint8).reshape(rows, -1, BLOCK // 2)
    low = (b & 15).astype(np.int8) - 8
    high = (b >> 4).astype(np.int8) - 8
    q = np.concatenate([low, high], axis=2)
    return (q.astype(np.float32) * d).reshape(rows, -1)


def main(argv):
    cmd, path = argv[1], argv[2]
    tensors, meta = read(path)
    if cmd == "dequantize":
        out = {}
        for name, (dtype, shape, blob) in tensors.items():
            if name.endswith(".scale"):
                continue
            if dtype in ("I8", "U8"):
                w = dequantize(dtype, shape, blob, tensors[name + ".scale"][2])
                out[name] = ("F32", list(w.shape), w.astype(np.float32).tobytes())
            else:
                out[name] = (dtype, shape, blob)
        write(argv[3], out, {"tlm.dtype": "f32"})
    elif cmd == "drop":
        del tensors[argv[3]]
        write(argv[4], tensors, meta)
    elif cmd == "narrow":
        dtype, shape, blob = tensors[argv[3]]
        a = np.frombuffer(blob, dtype=NUMPY[dtype]).reshape(shape)[:, :-1]
        tensors[argv[3]] = (dtype, list(a.shape), np.ascontiguousarray(a).tobytes())
        write(argv[4], tensors, meta)
    elif cmd == "set":
        dtype, shape, blob = tensors[argv[3]]
        a = np.frombuffer(blob, dtype=np.float32).copy()
        a[int(argv[4])] = float(argv[5])
        tensors[argv[3]] = (dtype, shape, a.tobytes())
        write(argv[6], tensors, meta)
    else:
        raise SystemExit(f"unknown command {cmd}")


main(sys.argv)
