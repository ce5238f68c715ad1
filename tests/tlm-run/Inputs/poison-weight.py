#!/usr/bin/env python3
"""Sets the first element of one F32 tensor of a safetensors file to NaN,
in place: poison-weight.py W.st NAME."""
import json
import struct
import sys

path, name = sys.argv[1], sys.argv[2]
with open(path, "r+b") as f:
    (n,) = struct.unpack("<Q", f.read(8))
    header = json.loads(f.read(n))
    f.seek(8 + n + header[name]["data_offsets"][0])
    f.write(struct.pack("<f", float("nan")))
