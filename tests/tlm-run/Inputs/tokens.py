#!/usr/bin/env python3
"""Writes a safetensors token file: tokens.py OUT.st "1 2 3; 4 5 6" [I32]
(rows separated by ';', the 'tokens' tensor I64 unless I32 is given)."""
import json
import struct
import sys

path, text = sys.argv[1], sys.argv[2]
dtype = sys.argv[3] if len(sys.argv) > 3 else "I64"
rows = [[int(t) for t in row.split()] for row in text.split(";")]
fmt = "<%d%s" % (sum(map(len, rows)), "q" if dtype == "I64" else "i")
data = struct.pack(fmt, *[t for row in rows for t in row])
header = json.dumps({"tokens": {"dtype": dtype,
                                "shape": [len(rows), len(rows[0])],
                                "data_offsets": [0, len(data)]}}).encode()
header += b" " * (-len(header) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header + data)
